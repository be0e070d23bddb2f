package e2e_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"amsg/web/browsertest"
)

type frame struct {
	Event string `json:"event"`
	Data  string `json:"data"`
}

// TestSSEDecoder runs the page's SSE decoder on chunk sequences: the parsing
// rules of amsg-client (reference §2.9).
func TestSSEDecoder(t *testing.T) {
	srv := newServer(t)
	b := browsertest.New(t, browsertest.Config{})
	p := b.NewPage()
	p.Navigate(srv.URL + "/#/settings")

	tests := []struct {
		name   string
		chunks []string
		want   []frame
	}{
		{"one frame", []string{"event: payload\ndata: {\"a\":1}\n\n"}, []frame{{"payload", `{"a":1}`}}},
		{"CRLF", []string{"event: payload\r\ndata: x\r\n\r\n"}, []frame{{"payload", "x"}}},
		{"CR LF split across chunks", []string{"event: payload\r", "\ndata: x\r", "\n\r", "\n"}, []frame{{"payload", "x"}}},
		{"lone CR", []string{"event: a\rdata: b\r\r"}, []frame{{"a", "b"}}},
		{"comments only", []string{": keepalive\n\n", ":\n\n"}, []frame{}},
		{"data lines trimmed and joined", []string{"data:  one \ndata:two\n\n"}, []frame{{"message", "one\ntwo"}}},
		{"event trimmed, id and retry ignored", []string{"id: 5\nretry: 10\nevent:  done \ndata: {}\n\n"}, []frame{{"done", "{}"}}},
		{"frame split mid-line", []string{"eve", "nt: pay", "load\nda", "ta: z\n", "\n"}, []frame{{"payload", "z"}}},
		{"last frame without blank line", []string{"event: payload\ndata: last"}, []frame{{"payload", "last"}}},
		{"trailing CR at the end", []string{"event: e\ndata: d\r"}, []frame{{"e", "d"}}},
		{"two frames in one chunk", []string{"event: a\ndata: 1\n\nevent: b\ndata: 2\n\n"}, []frame{{"a", "1"}, {"b", "2"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chunks, _ := json.Marshal(tt.chunks)
			var got []frame
			p.Eval(`(async () => {
				const { SSEDecoder } = await import('/js/sse.js');
				const d = new SSEDecoder();
				const out = [];
				for (const c of `+string(chunks)+`) out.push(...d.push(c));
				out.push(...d.end());
				return out;
			})()`, &got)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("frames %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestConsumeSSE reads whole responses whose bytes arrive split at the
// given offsets (one inside a UTF-8 character).
func TestConsumeSSE(t *testing.T) {
	srv := newServer(t)
	b := browsertest.New(t, browsertest.Config{})
	p := b.NewPage()
	p.Navigate(srv.URL + "/#/settings")

	type result struct {
		Payloads []map[string]any `json:"payloads"`
		Error    *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	tests := []struct {
		name   string
		body   string
		splits []int
		want   string // JSON of the result
	}{
		{"done ends reading", ": keepalive\n\nevent: payload\ndata: {\"n\":1}\n\nevent: payload\ndata: not json\n\nevent: done\ndata: {}\n\nevent: payload\ndata: {\"n\":2}\n\n",
			[]int{3, 20}, `{"payloads":[{"n":1}],"error":null}`},
		{"error frame", "event: payload\ndata: {\"n\":1}\n\nevent: error\ndata: {\"messageKind\":\"error\",\"code\":\"LLM_CALL_FAILED\",\"message\":\"boom\"}\n\n",
			nil, `{"payloads":[{"n":1}],"error":{"code":"LLM_CALL_FAILED","message":"boom"}}`},
		{"error frame that is not JSON", "event: error\ndata: upstream broke\n\n", nil, `{"payloads":[],"error":{"code":"PARSE_ERROR","message":"upstream broke"}}`},
		{"end of body without done", "event: payload\ndata: {\"n\":3}", []int{5}, `{"payloads":[{"n":3}],"error":null}`},
		{"UTF-8 split inside a character", "event: payload\ndata: {\"m\":\"你好\"}\n\n", []int{28}, `{"payloads":[{"m":"你好"}],"error":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, _ := json.Marshal(tt.body)
			splits, _ := json.Marshal(tt.splits)
			var got result
			p.Eval(`(async () => {
				const { consumeSSE } = await import('/js/sse.js');
				const bytes = new TextEncoder().encode(`+string(body)+`);
				const cuts = [0, ...(`+string(splits)+` || []), bytes.length];
				const stream = new ReadableStream({ start(c) {
					for (let i = 1; i < cuts.length; i++) c.enqueue(bytes.slice(cuts[i - 1], cuts[i]));
					c.close();
				} });
				const payloads = [];
				let error = null;
				try {
					await consumeSSE(new Response(stream), (p) => { payloads.push(p); });
				} catch (e) {
					error = { code: e.code, message: e.message };
				}
				return { payloads, error };
			})()`, &got)
			var want result
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			if want.Payloads == nil {
				want.Payloads = []map[string]any{}
			}
			if got.Payloads == nil {
				got.Payloads = []map[string]any{}
			}
			if !reflect.DeepEqual(got, want) {
				gotJSON, _ := json.Marshal(got)
				t.Errorf("got %s, want %s", gotJSON, tt.want)
			}
		})
	}
}
