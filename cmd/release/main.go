// Command release builds the release files of one amsg version: static
// binaries for every target, their SHA-256 sums and an SBOM.
//
//	go run ./cmd/release -version 0.2.0 [-out dist] [-targets linux/amd64,…]
//
// It refuses a version CHANGELOG.md has no section for, and stamps the
// version into each binary with -ldflags -X main.version=vX.Y.Z. The files:
//
//	amsg-X.Y.Z-linux-amd64, …-windows-amd64.exe   CGO-free static binaries
//	amsg-X.Y.Z.cdx.json                            CycloneDX 1.5 SBOM: the Go modules linked in
//	SHA256SUMS                                     sha256sum's format, for sha256sum -c
//
// No tool beyond Go is needed: the SBOM is read from the build information
// Go writes into every binary (what `go version -m` prints).
package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// defaultTargets are the platforms a release ships for.
const defaultTargets = "linux/amd64,linux/arm64,darwin/arm64,windows/amd64"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	fs.SetOutput(stderr)
	version := fs.String("version", "", "the version to release, X.Y.Z, with a section in CHANGELOG.md")
	out := fs.String("out", "dist", "directory for the release files (created; must not hold this version's files)")
	targets := fs.String("targets", defaultTargets, "comma-separated GOOS/GOARCH list")
	changelog := fs.String("changelog", "CHANGELOG.md", "the changelog that must have the version's section")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	r := release{version: *version, out: *out, targets: strings.Split(*targets, ","), now: time.Now}
	if err := r.check(*changelog); err != nil {
		fmt.Fprintf(stderr, "release: %v\n", err)
		return 2
	}
	files, err := r.build(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "release: %v\n", err)
		return 1
	}
	for _, f := range files {
		fmt.Fprintln(stdout, filepath.Join(r.out, f))
	}
	return 0
}

// release is one version's build.
type release struct {
	version string // X.Y.Z
	out     string
	targets []string // GOOS/GOARCH
	now     func() time.Time
}

var semver = regexp.MustCompile(`^\d+\.\d+\.\d+$`)

// check refuses a malformed version, an unknown target and a version the
// changelog has no dated section for.
func (r release) check(changelog string) error {
	if !semver.MatchString(r.version) {
		return fmt.Errorf("-version must be X.Y.Z, got %q", r.version)
	}
	for _, t := range r.targets {
		if goos, goarch, ok := strings.Cut(t, "/"); !ok || goos == "" || goarch == "" {
			return fmt.Errorf("-targets: %q is not GOOS/GOARCH", t)
		}
	}
	text, err := os.ReadFile(changelog)
	if err != nil {
		return err
	}
	section := regexp.MustCompile(`(?m)^## \[` + regexp.QuoteMeta(r.version) + `\] - \d{4}-\d{2}-\d{2}$`)
	if !section.Match(text) {
		return fmt.Errorf("%s has no section \"## [%s] - YYYY-MM-DD\": write the release notes first", changelog, r.version)
	}
	return nil
}

// build writes the binaries, the SBOM and the sums, and returns the names
// of the files it wrote.
func (r release) build(ctx context.Context) ([]string, error) {
	if err := os.MkdirAll(r.out, 0o755); err != nil {
		return nil, err
	}
	var files []string
	for _, target := range r.targets {
		name, err := r.buildBinary(ctx, target)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", target, err)
		}
		files = append(files, name)
	}
	sbom := "amsg-" + r.version + ".cdx.json"
	if err := r.writeSBOM(filepath.Join(r.out, files[0]), filepath.Join(r.out, sbom)); err != nil {
		return nil, fmt.Errorf("SBOM: %w", err)
	}
	files = append(files, sbom)
	if err := writeSums(r.out, files); err != nil {
		return nil, err
	}
	return append(files, "SHA256SUMS"), nil
}

// buildBinary builds one static, reproducible binary for target.
func (r release) buildBinary(ctx context.Context, target string) (string, error) {
	goos, goarch, _ := strings.Cut(target, "/")
	name := fmt.Sprintf("amsg-%s-%s-%s", r.version, goos, goarch)
	if goos == "windows" {
		name += ".exe"
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false",
		"-ldflags", "-s -w -X main.version=v"+r.version, "-o", filepath.Join(r.out, name), "./cmd/amsg")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	return name, nil
}

// writeSums writes SHA256SUMS for files in dir, in sha256sum's format.
func writeSums(dir string, files []string) error {
	var sums strings.Builder
	for _, name := range files {
		sum, err := fileSHA256(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		fmt.Fprintf(&sums, "%s  %s\n", sum, name)
	}
	return os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(sums.String()), 0o644)
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// cycloneDX is the part of a CycloneDX 1.5 BOM a list of Go modules needs.
type cycloneDX struct {
	BOMFormat    string      `json:"bomFormat"`
	SpecVersion  string      `json:"specVersion"`
	SerialNumber string      `json:"serialNumber"`
	Version      int         `json:"version"`
	Metadata     bomMetadata `json:"metadata"`
	Components   []component `json:"components"`
}

type bomMetadata struct {
	Timestamp string    `json:"timestamp"`
	Component component `json:"component"`
}

type component struct {
	Type    string `json:"type"`
	BOMRef  string `json:"bom-ref"`
	Name    string `json:"name"`
	Version string `json:"version"`
	PURL    string `json:"purl"`
}

// writeSBOM lists the modules linked into binary (the Go toolchain, and
// every dependency with the version go.sum pinned) as a CycloneDX BOM.
func (r release) writeSBOM(binary, path string) error {
	info, err := buildinfo.ReadFile(binary)
	if err != nil {
		return err
	}
	bom := cycloneDX{BOMFormat: "CycloneDX", SpecVersion: "1.5", SerialNumber: "urn:uuid:" + newUUID(), Version: 1,
		Metadata: bomMetadata{Timestamp: r.now().UTC().Format(time.RFC3339),
			Component: goComponent("application", info.Main.Path, "v"+r.version)}}
	bom.Components = append(bom.Components, goComponent("platform", "golang.org/toolchain", info.GoVersion))
	for _, dep := range info.Deps {
		if dep.Replace != nil {
			dep = dep.Replace
		}
		bom.Components = append(bom.Components, goComponent("library", dep.Path, dep.Version))
	}
	slices.SortFunc(bom.Components[1:], func(a, b component) int { return strings.Compare(a.Name, b.Name) })
	data, err := json.MarshalIndent(bom, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// goComponent names a Go module by its package URL.
func goComponent(kind, path, version string) component {
	purl := "pkg:golang/" + path + "@" + version
	return component{Type: kind, BOMRef: purl, Name: path, Version: version, PURL: purl}
}

// newUUID is a random (version 4) UUID for the BOM's serial number.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
