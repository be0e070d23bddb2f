package llm

import (
	"errors"
	"testing"
)

func TestNormalizeAPIURL(t *testing.T) {
	// Every row of the verified mapping table, plus the server contract's
	// examples.
	tests := []struct{ in, want string }{
		{"https://api.openai.com", "https://api.openai.com/v1/chat/completions"},
		{"https://api.openai.com/", "https://api.openai.com/v1/chat/completions"},
		{"https://api.openai.com/v1", "https://api.openai.com/v1/chat/completions"},
		{"https://api.openai.com/v1/", "https://api.openai.com/v1/chat/completions"},
		{"https://my.proxy.com/openai/v2", "https://my.proxy.com/openai/v2/chat/completions"},
		{"https://x/api/v10", "https://x/api/v10/chat/completions"},
		{"https://x/v1beta", "https://x/v1beta"},
		{"https://x/V1", "https://x/V1"},
		{"https://api.openai.com/v1/chat/completions", "https://api.openai.com/v1/chat/completions"},
		{"https://api.openai.com/v1/chat/completions/", "https://api.openai.com/v1/chat/completions"},
		{"https://api.anthropic.com/v1/messages", "https://api.anthropic.com/v1/messages"},
		{"https://x/foo/", "https://x/foo"},
		{"https://api.openai.com/v1?beta=1", "https://api.openai.com/v1/chat/completions?beta=1"},
		{"   https://api.openai.com/v1   ", "https://api.openai.com/v1/chat/completions"},
		{"https://X.COM:443/v2/", "https://x.com/v2/chat/completions"},
		{"http://x//", "http://x/v1/chat/completions"},
		{" https://api.example.com/v1/chat/completions/// ", "https://api.example.com/v1/chat/completions"},
		// Beyond the table: fragments and non-default ports are kept.
		{"https://x/v1#frag", "https://x/v1/chat/completions#frag"},
		{"http://localhost:11434/v1", "http://localhost:11434/v1/chat/completions"},
		{"http://x:80/", "http://x/v1/chat/completions"},
		{"https://x/v1?", "https://x/v1/chat/completions?"},
		{"https://user:pw@x/v1", "https://user:pw@x/v1/chat/completions"},
	}
	for _, tt := range tests {
		got, err := NormalizeAPIURL(tt.in)
		if err != nil {
			t.Errorf("NormalizeAPIURL(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("NormalizeAPIURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
		again, err := NormalizeAPIURL(got)
		if err != nil || again != got {
			t.Errorf("not idempotent: NormalizeAPIURL(%q) = %q, %v", got, again, err)
		}
	}
}

func TestNormalizeAPIURLInvalid(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "Invalid apiUrl: apiUrl is required. Please provide a chat endpoint URL (for example: https://api.openai.com or https://api.openai.com/v1/chat/completions)."},
		{"  \t ", "Invalid apiUrl: apiUrl is required. Please provide a chat endpoint URL (for example: https://api.openai.com or https://api.openai.com/v1/chat/completions)."},
		{"api.openai.com/v1", `Invalid apiUrl: "api.openai.com/v1". Please provide a valid absolute URL.`},
		{"ftp://x/v1", `Invalid apiUrl: "ftp://x/v1". Please provide a valid absolute URL.`},
		{"https://", `Invalid apiUrl: "https://". Please provide a valid absolute URL.`},
		{"http://[::1", `Invalid apiUrl: "http://[::1". Please provide a valid absolute URL.`},
	}
	for _, tt := range tests {
		_, err := NormalizeAPIURL(tt.in)
		if err == nil {
			t.Errorf("NormalizeAPIURL(%q): no error", tt.in)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("NormalizeAPIURL(%q) error = %q, want %q", tt.in, err, tt.want)
		}
		if !errors.Is(err, ErrInvalidAPIURL) {
			t.Errorf("NormalizeAPIURL(%q) error is not ErrInvalidAPIURL", tt.in)
		}
	}
}

func FuzzNormalizeAPIURL(f *testing.F) {
	for _, s := range []string{"https://api.openai.com", "http://x//", "https://X.COM:443/v2/?a=b#c", "https://x/%2F/v1/", "http://[::1]:8080/v3", "https://u:p@h/v1?"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := NormalizeAPIURL(in)
		if err != nil {
			return
		}
		again, err := NormalizeAPIURL(got)
		if err != nil {
			t.Fatalf("NormalizeAPIURL(%q) = %q, which is then rejected: %v", in, got, err)
		}
		if again != got {
			t.Fatalf("not idempotent: %q → %q → %q", in, got, again)
		}
	})
}
