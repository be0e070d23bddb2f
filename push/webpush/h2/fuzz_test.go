package h2

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// FuzzServerFrames feeds arbitrary bytes as the server's frames after
// its SETTINGS, with a request in flight on stream 1, then hangs up: the
// client must not panic, and the request must end (with an answer or an
// error) once the connection does. The server is on loopback TCP: TLS
// over net.Pipe, which has no buffer, can deadlock on its own.
func FuzzServerFrames(f *testing.F) {
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	_ = enc.WriteField(hpack.HeaderField{Name: ":status", Value: "429"})
	_ = enc.WriteField(hpack.HeaderField{Name: "retry-after", Value: "3"})
	seed := func(write func(fr *http2.Framer)) []byte {
		var b bytes.Buffer
		write(http2.NewFramer(&b, nil))
		return b.Bytes()
	}
	f.Add(seed(func(fr *http2.Framer) {
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block.Bytes(), EndHeaders: true})
		_ = fr.WriteDataPadded(1, true, []byte("too many"), make([]byte, 9))
	}))
	f.Add(seed(func(fr *http2.Framer) {
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block.Bytes()[:2]})
		_ = fr.WriteContinuation(1, true, block.Bytes()[2:])
	}))
	f.Add(seed(func(fr *http2.Framer) {
		_ = fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 30},
			http2.Setting{ID: http2.SettingHeaderTableSize, Val: 0})
		_ = fr.WriteWindowUpdate(0, 1<<31-1)
		_ = fr.WritePing(false, [8]byte{1})
		_ = fr.WriteGoAway(0, http2.ErrCodeEnhanceYourCalm, []byte("calm"))
	}))
	f.Add(seed(func(fr *http2.Framer) {
		_ = fr.WriteRSTStream(1, http2.ErrCodeRefusedStream)
		_ = fr.WriteData(3, false, make([]byte, 100))
	}))
	cert, pool := testCert(f)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	f.Fuzz(func(t *testing.T, frames []byte) {
		served := make(chan struct{})
		go func() {
			defer close(served)
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			defer func() { _ = nc.Close() }()
			tc := tls.Server(nc, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}})
			if tc.Handshake() != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, tc) }() // the client's frames; ends when the client closes
			fr := http2.NewFramer(tc, nil)
			if fr.WriteSettings() != nil {
				return
			}
			_, _ = tc.Write(frames)
		}()
		var dialed atomic.Bool
		c := New(Config{TLS: &tls.Config{RootCAs: pool}, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			if dialed.Swap(true) { // the server serves one connection
				return nil, errors.New("no second connection")
			}
			return (&net.Dialer{}).DialContext(ctx, "tcp", ln.Addr().String())
		}})
		defer c.Close()
		// The deadline only backs up the hang-up, which ends every request.
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		req := post("x")
		req.Authority = "127.0.0.1:443"
		resp, err := c.Do(ctx, req)
		if ctx.Err() != nil {
			t.Fatalf("the request outlived the connection: %v", err)
		}
		if err == nil && (resp.Status < 200 || len(resp.Body) > c.cfg.BodySnippet) {
			t.Errorf("answer %+v", resp)
		}
		<-served
	})
}
