package main

import (
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

const versionUsage = `Usage: strata version

Prints strata's module version (from the build information: a release tag
for "go install …@version", "(devel)" for a build from a checkout, with the
commit when known) and the Go version and platform it was built with.
`

func cmdVersion(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	pos, err := parseFlags(fs, args, versionUsage, stdout)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("version: unexpected argument %q", pos[0])
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = nil
	}
	_, err = fmt.Fprintln(stdout, versionLine(info))
	return err
}

// versionLine is "strata VERSION [(commit C[, modified])] GOVERSION OS/ARCH"
// from the build information (nil when the binary has none).
func versionLine(info *debug.BuildInfo) string {
	version, goVersion := "(unknown)", runtime.Version()
	var commit string
	modified := false
	if info != nil {
		if info.Main.Version != "" {
			version = info.Main.Version
		}
		if info.GoVersion != "" {
			goVersion = info.GoVersion
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "strata %s", version)
	if commit != "" {
		fmt.Fprintf(&b, " (commit %s", commit[:min(len(commit), 12)])
		if modified {
			b.WriteString(", modified")
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, " %s %s/%s", goVersion, runtime.GOOS, runtime.GOARCH)
	return b.String()
}
