package autoconfig

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/strata-go/strata/db"
)

// OpenDatabase opens the PostgreSQL pool of cfg's datasource (DatabaseURL)
// with db.Open, and returns nil, nil when cfg uses in-memory stores. It
// does not migrate. A connection that fails because of TLS — the server
// offers none, requires it, or its certificate is not accepted — gives an
// error that says which sslmode fixes it (see TLSHint); the driver's error
// stays in the chain.
func OpenDatabase(ctx context.Context, cfg *Config) (*sqlx.DB, error) {
	if cfg == nil {
		cfg = Default()
	}
	dsn, err := cfg.DatabaseURL()
	if err != nil || dsn == "" {
		return nil, err
	}
	d, err := db.Open(ctx, dsn)
	if err != nil {
		if hint := TLSHint(err); hint != "" {
			return nil, fmt.Errorf("%w (%s)", err, hint)
		}
		return nil, err
	}
	return d, nil
}

// TLSHint returns how to fix a connection error caused by TLS, "" for any
// other error:
//
//   - the server offers no TLS but the URL requires it (sslmode=require,
//     verify-ca or verify-full): add sslmode=disable, or sslmode=prefer;
//   - the server accepts only encrypted connections (pg_hba.conf has no
//     entry for an unencrypted one): use sslmode=require or verify-full;
//   - the server's certificate is not trusted or does not name the host:
//     give the CA with sslrootcert, or use sslmode=require, which encrypts
//     without verifying.
func TLSHint(err error) string {
	if err == nil {
		return ""
	}
	if errors.Is(err, pq.ErrSSLNotSupported) {
		return "the server does not offer TLS: add sslmode=disable (or sslmode=prefer) to the datasource URL, or enable ssl on the server"
	}
	var pqErr *pq.Error
	if errors.As(err, &pqErr) && pqErr.Code == "28000" && strings.Contains(pqErr.Message, "no encryption") {
		return "the server accepts only encrypted connections: set sslmode=require (or verify-full with sslrootcert) in the datasource URL"
	}
	var (
		unknownCA *x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		verify    *tls.CertificateVerificationError
	)
	if errors.As(err, &unknownCA) || errors.As(err, &hostname) || errors.As(err, &invalid) || errors.As(err, &verify) ||
		strings.Contains(err.Error(), "x509: ") {
		return "the server's TLS certificate was not accepted: give its CA with sslrootcert=/path/to/ca.crt, or set sslmode=require to encrypt without verifying the certificate"
	}
	var alert tls.AlertError
	if errors.As(err, &alert) || strings.Contains(err.Error(), "tls: ") {
		return "the TLS handshake with the server failed: check the server's ssl settings, or set sslmode=disable for a server without TLS"
	}
	return ""
}
