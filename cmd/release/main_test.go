package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A release of the changelog's newest version for this machine's platform:
// the binary says its version, the sums match the files, and the SBOM
// lists the modules linked in.
func TestReleaseBuildsStampedBinariesWithSumsAndSBOM(t *testing.T) {
	t.Chdir("../..")
	out := t.TempDir()
	target := runtime.GOOS + "/" + runtime.GOARCH
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"-version", "0.1.0", "-out", out, "-targets", target}, &stdout, &stderr); code != 0 {
		t.Fatalf("release = %d\n%s", code, stderr.String())
	}
	binary := filepath.Join(out, "amsg-0.1.0-"+runtime.GOOS+"-"+runtime.GOARCH)
	if got, err := exec.Command(binary, "version").Output(); err != nil || string(got) != "amsg v0.1.0\n" {
		t.Errorf("%s version = %q, %v", binary, got, err)
	}

	sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(sums)), "\n")
	if len(lines) != 2 {
		t.Fatalf("SHA256SUMS:\n%s", sums)
	}
	for _, line := range lines {
		sum, name, _ := strings.Cut(line, "  ")
		if got, err := fileSHA256(filepath.Join(out, name)); err != nil || got != sum {
			t.Errorf("%s: sum %s, file %s (%v)", name, sum, got, err)
		}
	}

	var bom cycloneDX
	data, err := os.ReadFile(filepath.Join(out, "amsg-0.1.0.cdx.json"))
	if err != nil || json.Unmarshal(data, &bom) != nil {
		t.Fatalf("SBOM: %v\n%s", err, data)
	}
	if bom.BOMFormat != "CycloneDX" || bom.SpecVersion != "1.5" || bom.Metadata.Component.PURL != "pkg:golang/amsg@v0.1.0" {
		t.Errorf("SBOM head: %+v", bom)
	}
	purls := map[string]bool{}
	for _, c := range bom.Components {
		purls[c.PURL] = true
	}
	for _, want := range []string{"pkg:golang/github.com/go-chi/chi/v5@v5.5.0", "pkg:golang/modernc.org/sqlite@"} {
		found := false
		for purl := range purls {
			found = found || strings.HasPrefix(purl, want)
		}
		if !found {
			t.Errorf("the SBOM lacks %s", want)
		}
	}
}

func TestReleaseRefusesWhatItCannotRelease(t *testing.T) {
	t.Chdir("../..")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-version", "v1.0"}, "-version must be X.Y.Z"},
		{[]string{"-version", "99.0.0"}, `no section "## [99.0.0] - YYYY-MM-DD"`},
		{[]string{"-version", "0.1.0", "-targets", "linux"}, `"linux" is not GOOS/GOARCH`},
	} {
		var stderr bytes.Buffer
		if code := run(t.Context(), append(c.args, "-out", t.TempDir()), &bytes.Buffer{}, &stderr); code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v = %d %q, want 2 and %q", c.args, code, stderr.String(), c.want)
		}
	}
}
