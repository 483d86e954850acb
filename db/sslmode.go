package db

import (
	"net/url"
	"os"
	"regexp"
	"strings"

	"github.com/lib/pq"
)

// withPreferredTLS returns dsn with sslmode=prefer when neither dsn nor the
// environment chooses an sslmode, so that a URL without one behaves as it
// does for psql, libpq and the JDBC driver: TLS when the server offers it,
// else a plain connection. (lib/pq's own default is require, which fails
// on a server without TLS.) dsn is returned unchanged when it or the
// environment (PGSSLMODE, PGSERVICE) names an sslmode or a service, when
// its TLS settings allow only a stronger mode (sslrootcert=system,
// sslnegotiation=direct), and when it cannot be parsed (Open then reports
// the error).
func withPreferredTLS(dsn string) string {
	if hasSSLMode(dsn) || os.Getenv("PGSSLMODE") != "" {
		return dsn
	}
	cfg, err := pq.NewConfig(dsn) // the environment included
	if err != nil || cfg.Service != "" || cfg.SSLRootCert == "system" || cfg.SSLNegotiation == pq.SSLNegotiationDirect {
		return dsn
	}
	out, err := WithDSNParams(dsn, map[string]string{"sslmode": string(pq.SSLModePrefer)})
	if err != nil || !hasSSLMode(out) { // a URL without a host ("postgres://") loses its form
		return dsn
	}
	return out
}

var kvSSLMode = regexp.MustCompile(`(?i)(^|\s)sslmode\s*=`)

// hasSSLMode reports whether dsn, a URL or a key=value string, sets
// sslmode (a URL that cannot be parsed counts as setting it).
func hasSSLMode(dsn string) bool {
	if !urlScheme.MatchString(dsn) {
		return kvSSLMode.MatchString(dsn)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return true
	}
	for k := range u.Query() {
		if strings.EqualFold(k, "sslmode") {
			return true
		}
	}
	return false
}
