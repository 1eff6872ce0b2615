package ferry

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	if !regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`).MatchString(Version) {
		t.Fatalf("Version %q is not a release version (MAJOR.MINOR.PATCH[-QUALIFIER])", Version)
	}
}

// build.sh and ./ferry read the version with scripts/version.sh: it must agree with Go's reading.
func TestVersionScript(t *testing.T) {
	out, err := exec.Command("bash", "scripts/version.sh").Output()
	if err != nil {
		t.Fatalf("scripts/version.sh: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != Version {
		t.Fatalf("scripts/version.sh prints %q, Go reads %q from pom.xml", got, Version)
	}
}

func TestRevision(t *testing.T) {
	pom := "<project>\n  <!-- the <revision> below -->\n  <version>${revision}</version>\n" +
		"  <properties>\n    <revision>1.2.3-rc1</revision>\n  </properties>\n" +
		"  <revision>9.9.9</revision>\n</project>\n"
	if got := revision(pom); got != "1.2.3-rc1" {
		t.Fatalf("revision = %q, want 1.2.3-rc1", got)
	}
	for _, bad := range []string{"", "<revision>${x}</revision>", "<revision></revision>", "<revision>1.0"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("revision(%q) did not panic", bad)
				}
			}()
			revision(bad)
		}()
	}
}
