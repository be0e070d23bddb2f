package api

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"amsg/loop"
	"amsg/scheduler"
)

// TestEveryCodeInBothLanguages walks errorTable through writeError: without
// Accept-Language each message is the English row, with zh-CN it is the
// Chinese text byte for byte.
func TestEveryCodeInBothLanguages(t *testing.T) {
	s := &Server{log: testLogger(t)}
	seen := map[[2]string]bool{}
	for _, row := range errorTable {
		key := [2]string{row.Code, row.ZH}
		if seen[key] {
			t.Errorf("%s %q is in the table twice", row.Code, row.ZH)
		}
		seen[key] = true
		if row.EN == "" || row.ZH == "" || hasHan(row.EN) {
			t.Errorf("%s: want an English text without Chinese and a Chinese text, got %q / %q", row.Code, row.EN, row.ZH)
		}
		for _, lang := range []struct{ header, want string }{{"", row.EN}, {"zh-CN", row.ZH}, {"en-US,zh;q=0.5", row.EN}, {"zh-TW;q=0.9,en;q=0.8", row.ZH}} {
			req := httptest.NewRequest(http.MethodGet, "/api/v1/x", nil)
			if lang.header != "" {
				req.Header.Set("Accept-Language", lang.header)
			}
			rec := httptest.NewRecorder()
			s.writeError(rec, req, newError(http.StatusBadRequest, row.Code, row.ZH))
			var body struct {
				Error struct{ Code, Message string }
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatal(err)
			}
			if body.Error.Code != row.Code || body.Error.Message != lang.want {
				t.Errorf("%s with Accept-Language %q: got %s %q, want %q", row.Code, lang.header, body.Error.Code, body.Error.Message, lang.want)
			}
		}
	}
}

// TestFallbackEnglish covers messages the table does not list: a formatted
// Chinese one gets its code's default with the fields its details name; one
// without Chinese is kept as is.
func TestFallbackEnglish(t *testing.T) {
	for _, tc := range []struct {
		err  *Error
		want string
	}{
		{invalidParameters("limit 必须是 1-100 的整数", "limit"), "Missing or invalid parameters: limit"},
		{newError(http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE", "请求体超过 1024 字节上限"), "The payload is too large"},
		{newError(http.StatusBadGateway, "LLM_CALL_FAILED", "LLM answered 401 Unauthorized"), "LLM answered 401 Unauthorized"},
		{newError(http.StatusTeapot, "SOMETHING_NEW", "新的错误"), "Request failed (SOMETHING_NEW)"},
		{newError(http.StatusBadRequest, "INVALID_PUSH_SUBSCRIPTION", "推送订阅无效：x").withDetails(map[string]any{"field": "endpoint", "reason": "must be an https URL"}),
			"Invalid push subscription: must be an https URL"},
	} {
		if got := englishMessage(tc.err); got != tc.want {
			t.Errorf("englishMessage(%s %q) = %q, want %q", tc.err.Code, tc.err.Message, got, tc.want)
		}
	}
}

func TestPrefersChinese(t *testing.T) {
	for header, want := range map[string]bool{
		"":                        false,
		"zh":                      true,
		"ZH-cn":                   true,
		"zh-Hant-TW,en;q=0.9":     true,
		"en-US,en;q=0.9,zh;q=0.8": false,
		"en;q=0.5,zh-CN;q=0.9":    true,
		"zhx":                     false,
		"*":                       false,
		"zh;q=0":                  false,
		"zh;q=abc,en":             false,
		"en;q=1,zh;q=1":           false,
		",,;,zh":                  true,
	} {
		if got := prefersChinese(header); got != want {
			t.Errorf("prefersChinese(%q) = %v, want %v", header, got, want)
		}
	}
}

func FuzzPrefersChinese(f *testing.F) {
	for _, seed := range []string{"", "zh-CN", "en;q=0.5,zh;q=0.9", "zh;q=1e400", strings.Repeat("zh,", 100)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, header string) {
		if prefersChinese(header) && !strings.Contains(strings.ToLower(header), "zh") {
			t.Fatalf("prefersChinese(%q) without zh in it", header)
		}
	})
}

// TestEveryProducedErrorIsInTheTable reads the package's source: every code
// a handler passes to newError, and every literal Chinese message it gives
// one, must have a row, so no code goes out without its English text. The
// codes the agent loop and the scheduler hand over are checked too.
func TestEveryProducedErrorIsInTheTable(t *testing.T) {
	for _, code := range []string{loop.CodeLLMCallFailed, loop.CodePushSendFailed, loop.CodeLoopExceeded,
		loop.CodeBudgetExhausted, scheduler.CodeSubscriptionMissing} {
		if _, ok := defaultTexts[code]; !ok {
			t.Errorf("code %s of the loop or the scheduler has no row", code)
		}
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	// helper → the argument index of its message, and of its code (-1: INVALID_PARAMETERS etc.)
	helpers := map[string][2]int{"newError": {2, 1}, "invalidParameters": {0, -1}, "invalidTimestamp": {0, -1},
		"invalidFields": {0, -1}, "missingFields": {0, -1}, "invalidPayload": {0, -1}, "unauthorized": {0, -1}}
	fixedCodes := map[string]string{"invalidParameters": "INVALID_PARAMETERS", "invalidTimestamp": "INVALID_TIMESTAMP",
		"invalidFields": "INVALID_PAYLOAD_FORMAT", "missingFields": "INVALID_PAYLOAD_FORMAT", "invalidPayload": "INVALID_PAYLOAD_FORMAT",
		"unauthorized": "UNAUTHORIZED"}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			id, ok := call.Fun.(*ast.Ident)
			if !ok {
				return true
			}
			at, ok := helpers[id.Name]
			if !ok {
				return true
			}
			code, message := fixedCodes[id.Name], ""
			if at[1] >= 0 && at[1] < len(call.Args) {
				code = literal(call.Args[at[1]])
			}
			if at[0] < len(call.Args) {
				message = literal(call.Args[at[0]])
			}
			pos := fset.Position(call.Pos())
			if code == "" {
				return true // a code carried in a variable: the loop's, checked above
			}
			checked++
			if _, ok := defaultTexts[code]; !ok {
				t.Errorf("%s: code %s has no row in errorTable", pos, code)
			}
			if hasHan(message) {
				if _, ok := errorTexts[[2]string{code, message}]; !ok {
					t.Errorf("%s: %s %q has no row in errorTable", pos, code, message)
				}
			}
			return true
		})
	}
	if checked < 50 {
		t.Fatalf("checked only %d error sites; the scan is broken", checked)
	}
}

func literal(e ast.Expr) string {
	if l, ok := e.(*ast.BasicLit); ok && l.Kind == token.STRING {
		s, _ := strconv.Unquote(l.Value)
		return s
	}
	return ""
}

// TestEndpointsAnswerInEnglishByDefault goes through the real router: the
// same failure is English without Accept-Language and the standard's text
// with zh-CN.
func TestEndpointsAnswerInEnglishByDefault(t *testing.T) {
	srv := httptest.NewServer(newTestServer(t, Config{}, Deps{}))
	defer srv.Close()
	for header, want := range map[string]string{
		"":      `{"success":false,"error":{"code":"USER_ID_REQUIRED","message":"Missing user id (X-User-Id)"}}` + "\n",
		"zh-CN": `{"success":false,"error":{"code":"USER_ID_REQUIRED","message":"缺少用户标识符"}}` + "\n",
	} {
		req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/api/v1/client-state", nil)
		if header != "" {
			req.Header.Set("Accept-Language", header)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != want {
			t.Errorf("Accept-Language %q: got %s, want %s", header, body, want)
		}
	}
}
