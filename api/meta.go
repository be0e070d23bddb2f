package api

import (
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metaFeature is the server's self-description: the VAPID public key a page
// subscribes with, and the capability list clients use to detect an old
// deployment.
func (s *Server) metaFeature() feature {
	capabilities := []string{"vapid-public-key"}
	if !s.cfg.ApplePushRefused {
		capabilities = append(capabilities, "apple-web-push")
	}
	return feature{
		capabilities: capabilities,
		routes: []route{
			{http.MethodGet, "vapid-public-key", authClient, s.handleVAPIDPublicKey},
			{http.MethodGet, "capabilities", authClient, s.handleCapabilities},
		},
	}
}

// handleVAPIDPublicKey answers {"success":true,"publicKey":…}: top level,
// not under data, as amsg-client reads it.
func (s *Server) handleVAPIDPublicKey(w http.ResponseWriter, r *http.Request) error {
	// The store generates the pair on first start, so there always is one.
	key := s.deps.Store.Secrets().VAPIDPublicKey
	writeJSON(w, http.StatusOK, struct {
		Success   bool   `json:"success"`
		PublicKey string `json:"publicKey"`
	}{true, key})
	return nil
}

// applePushWarning is what /capabilities says while Apple endpoints are
// refused.
const applePushWarning = "pushes to Apple devices are refused: the VAPID subject is a placeholder Apple rejects; " +
	"set AMSG_VAPID_SUBJECT to a real contact"

// handleCapabilities lists only features this server really implements,
// and warns of a configuration that keeps some devices from receiving.
func (s *Server) handleCapabilities(w http.ResponseWriter, r *http.Request) error {
	var warnings []string
	if s.cfg.ApplePushRefused {
		warnings = append(warnings, applePushWarning)
	}
	writeJSON(w, http.StatusOK, struct {
		Success       bool     `json:"success"`
		ServerVersion string   `json:"serverVersion"`
		Features      []string `json:"features"`
		Warnings      []string `json:"warnings,omitempty"`
	}{true, s.cfg.ServerVersion, s.features, warnings})
	return nil
}

// handleMetrics serves the Prometheus text format. When a client token is
// configured the scraper must present it, as X-Client-Token or as a Bearer
// token (what Prometheus' authorization setting sends).
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	if s.cfg.ClientToken != "" {
		token := r.Header.Get("X-Client-Token")
		if auth := r.Header.Get("Authorization"); token == "" && len(auth) > 7 && strings.EqualFold(auth[:7], "bearer ") {
			token = auth[7:] // the whole rest is compared: no prefix of any 7 bytes passes
		}
		if !s.tokens.equal(token, s.cfg.ClientToken) {
			s.writeError(w, r, errInvalidClientToken)
			return
		}
	}
	promhttp.HandlerFor(s.deps.Metrics, promhttp.HandlerOpts{}).ServeHTTP(w, r)
}
