// Package ferry holds what the whole project shares: its version.
package ferry

import (
	_ "embed"
	"strings"
)

// The root pom.xml. Its <revision> property is the project version, the one line a release
// changes: Maven versions every module with it, build.sh and ./ferry read it (scripts/version.sh),
// and libferry.so reports it through this package.
//
//go:embed pom.xml
var pom string

// Version is the project version, e.g. "0.1.0" (ferry_version reports "ferry VERSION (abi N)").
var Version = revision(pom)

// revision returns VALUE of the first line of pom that is <revision>VALUE</revision>, give or take
// surrounding blanks.
func revision(pom string) string {
	for _, line := range strings.Split(pom, "\n") {
		v, ok := strings.CutPrefix(strings.TrimSpace(line), "<revision>")
		if !ok {
			continue
		}
		if v, ok = strings.CutSuffix(v, "</revision>"); ok && v != "" && !strings.ContainsAny(v, "<>${} \t") {
			return v
		}
	}
	panic("ferry: pom.xml has no <revision>VERSION</revision> line")
}
