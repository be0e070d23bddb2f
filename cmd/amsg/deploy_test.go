package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"amsg/store/storetest"
)

// The proxy recipes in deploy/ are loaded by the real proxies, from
// Debian's packages (.ci/run installs them).

// requireTool finds a program the test needs: it skips without it, except
// under CI, where it fails.
func requireTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv(storetest.EnvCI) != "" {
			t.Fatalf("%s is not installed, and CI must run this test (.ci/run installs it)", name)
		}
		t.Skipf("%s is not installed", name)
	}
	return path
}

// Issue 23, problem 3: the README's nginx block did not load on Debian 12's
// nginx 1.22. Each nginx recipe is checked by `nginx -t` with its
// certificate paths pointed at a throwaway certificate; the one for 1.25.1
// and newer only where that nginx is installed, and elsewhere it must fail
// on exactly the directive that needs it.
func TestNginxRecipesLoad(t *testing.T) {
	nginx := requireTool(t, "nginx")
	out, err := exec.Command(nginx, "-v").CombinedOutput()
	m := regexp.MustCompile(`nginx/(\d+)\.(\d+)\.(\d+)`).FindStringSubmatch(string(out))
	if err != nil || m == nil {
		t.Fatalf("nginx -v: %v %s", err, out)
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	patch, _ := strconv.Atoi(m[3])
	http2On := major > 1 || minor > 25 || minor == 25 && patch >= 1
	t.Logf("nginx %s.%s.%s", m[1], m[2], m[3])

	for _, c := range []struct {
		recipe string
		loads  bool
	}{
		{"amsg-nginx-1.22.conf", true},
		{"amsg-nginx-1.25.conf", http2On},
	} {
		t.Run(c.recipe, func(t *testing.T) {
			dir := t.TempDir()
			recipe, err := os.ReadFile(filepath.Join("../../deploy/nginx", c.recipe))
			if err != nil {
				t.Fatal(err)
			}
			requireTrustedProxies(t, c.recipe, recipe)
			writeCertificate(t, dir)
			conf := writeNginxConf(t, dir, string(recipe))
			out, err := exec.Command(nginx, "-t", "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", conf).CombinedOutput()
			switch {
			case c.loads && err != nil:
				t.Errorf("nginx -t refuses %s: %v\n%s", c.recipe, err, out)
			case !c.loads && (err == nil || !strings.Contains(string(out), `unknown directive "http2"`)):
				t.Errorf("nginx before 1.25.1 should refuse %s on `http2 on;` alone: %v\n%s", c.recipe, err, out)
			case !c.loads:
				t.Logf("this nginx is older than 1.25.1: %s is not validated here", c.recipe)
			}
		})
	}
}

// writeNginxConf writes recipe, its certificates taken from dir (where
// writeCertificate put them), into an nginx.conf of its own in dir with
// everything nginx writes kept in dir too, and returns the conf's path.
func writeNginxConf(t *testing.T, dir, recipe string) string {
	t.Helper()
	conf := strings.ReplaceAll(recipe, "/etc/letsencrypt/live/push.example.org/", dir+"/")
	main := "pid " + dir + "/nginx.pid;\nerror_log stderr notice;\nevents {}\nhttp {\n" +
		"    access_log off;\n    client_body_temp_path " + dir + ";\n    proxy_temp_path " + dir + ";\n" +
		"    fastcgi_temp_path " + dir + ";\n    uwsgi_temp_path " + dir + ";\n    scgi_temp_path " + dir + ";\n" +
		"    include " + dir + "/amsg.conf;\n}\n"
	for name, text := range map[string]string{"amsg.conf": conf, "nginx.conf": main} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "nginx.conf")
}

// The Caddyfile passes `caddy validate`.
func TestCaddyfileValidates(t *testing.T) {
	caddy := requireTool(t, "caddy")
	recipe, err := os.ReadFile("../../deploy/Caddyfile")
	if err != nil {
		t.Fatal(err)
	}
	requireTrustedProxies(t, "Caddyfile", recipe)
	cmd := exec.Command(caddy, "validate", "--config", "../../deploy/Caddyfile", "--adapter", "caddyfile")
	home := t.TempDir() // caddy keeps its state under the home directory
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_DATA_HOME="+home, "XDG_CONFIG_HOME="+home)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "Valid configuration") {
		t.Errorf("caddy validate: %v\n%s", err, out)
	}
}

// Issue 23, problem 5: the compose file sets the client token, the public
// URL and the proxy amsg trusts.
func TestComposeFileSetsWhatAPublicServerNeeds(t *testing.T) {
	compose, err := os.ReadFile("../../deploy/docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"AMSG_CLIENT_TOKEN: ${AMSG_CLIENT_TOKEN:?", "AMSG_PUBLIC_URL: https://${AMSG_DOMAIN",
		"AMSG_TRUSTED_PROXIES: 172.30.80.10", "ipv4_address: 172.30.80.10"} {
		if !strings.Contains(string(compose), want) {
			t.Errorf("docker-compose.yml lacks %q", want)
		}
	}
}

// requireTrustedProxies fails a recipe that does not tell the operator to
// set AMSG_TRUSTED_PROXIES: without it every client behind the proxy shares
// one rate limit.
func requireTrustedProxies(t *testing.T, name string, recipe []byte) {
	t.Helper()
	if !strings.Contains(string(recipe), "AMSG_TRUSTED_PROXIES=127.0.0.1,::1") {
		t.Errorf("%s does not set AMSG_TRUSTED_PROXIES", name)
	}
}

// writeCertificate writes a self-signed fullchain.pem and privkey.pem for
// push.example.org into dir.
func writeCertificate(t *testing.T, dir string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "push.example.org"},
		DNSNames: []string{"push.example.org"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for name, block := range map[string]*pem.Block{"fullchain.pem": {Type: "CERTIFICATE", Bytes: der}, "privkey.pem": {Type: "PRIVATE KEY", Bytes: keyDER}} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// The Helm chart lints, renders SQLite as one replica on a volume and
// PostgreSQL as several without one, and refuses several on SQLite.
func TestHelmChart(t *testing.T) {
	helm := requireTool(t, "helm")
	const chart = "../../deploy/helm/amsg"
	home := t.TempDir()
	runHelm := func(args ...string) (string, error) {
		cmd := exec.Command(helm, args...)
		cmd.Env = append(os.Environ(), "HOME="+home, "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	postgres := []string{"--set", "postgres.enabled=true", "--set", "postgres.existingSecret=amsg-db", "--set", "replicaCount=3"}
	for _, values := range [][]string{nil, postgres} {
		if out, err := runHelm(append([]string{"lint", "--strict", chart}, values...)...); err != nil {
			t.Errorf("helm lint %v: %v\n%s", values, err, out)
		}
	}

	sqlite, err := runHelm("template", "amsg", chart, "--set", "publicURL=https://push.example.org/")
	if err != nil {
		t.Fatalf("helm template (SQLite): %v\n%s", err, sqlite)
	}
	for _, want := range []string{"kind: PersistentVolumeClaim", "replicas: 1", "type: Recreate", "name: AMSG_DATA_DIR",
		"name: AMSG_TRUSTED_PROXIES", "name: AMSG_PUBLIC_URL", "mountPath: /data", "path: /healthz"} {
		if !strings.Contains(sqlite, want) {
			t.Errorf("the SQLite rendering lacks %q", want)
		}
	}
	several, err := runHelm(append([]string{"template", "amsg", chart}, postgres...)...)
	if err != nil {
		t.Fatalf("helm template (PostgreSQL): %v\n%s", err, several)
	}
	for _, want := range []string{"replicas: 3", "name: AMSG_DATABASE_URL", "name: AMSG_DATABASE_DIRECT_URL", "name: amsg-db"} {
		if !strings.Contains(several, want) {
			t.Errorf("the PostgreSQL rendering lacks %q", want)
		}
	}
	for _, unwanted := range []string{"PersistentVolumeClaim", "Recreate", "AMSG_DATA_DIR"} {
		if strings.Contains(several, unwanted) {
			t.Errorf("the PostgreSQL rendering has %q", unwanted)
		}
	}
	if out, err := runHelm("template", "amsg", chart, "--set", "replicaCount=2"); err == nil || !strings.Contains(out, "SQLite runs one replica") {
		t.Errorf("two replicas on SQLite rendered: %v\n%s", err, out)
	}
}
