package front

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http/httptest"
	"testing"

	"modelgateway/core/wire/apierror"
	"modelgateway/front/relay"
)

func gzipped(t *testing.T, parts ...[]byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	for _, p := range parts {
		if _, err := zw.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// randomText is n bytes of hex: it compresses about 2 times, far below gzipMaxRatio.
func randomText(n int) []byte {
	raw := make([]byte, (n+1)/2)
	_, _ = rand.Read(raw)
	return []byte(hex.EncodeToString(raw)[:n])
}

// A gzip body is decoded against the route's limit (its first byte beyond is
// payload_too_large, and nothing past it is decoded) and against gzipMaxRatio (a body that
// expands more is payload_too_large once past gzipRatioFloor, having decoded at most the
// ratio times what arrived); an ordinary body is decoded whole.
func TestGzipBodyIsDecodedWithinItsBounds(t *testing.T) {
	t.Parallel()
	const limit = 1 << 20
	zeros := make([]byte, 100<<20)
	cases := []struct {
		name       string
		body       []byte
		limit      int64
		code       string
		maxDecoded int64
	}{
		{"an ordinary body", gzipped(t, []byte(`{"a":"`), randomText(limit-8), []byte(`"}`)), limit, "", limit},
		{"one byte over the limit", gzipped(t, randomText(limit+1)), limit, apierror.PayloadTooLarge, limit + 1},
		{"far over the limit", gzipped(t, randomText(3*limit)), limit, apierror.PayloadTooLarge, limit + 1},
		// Within a 32 MiB limit, a 100 KB upload decodes no more than 64 times itself.
		{"a bomb (100 MiB of zeros)", gzipped(t, zeros), 32 << 20, apierror.PayloadTooLarge, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/v1/chat/completions", bytes.NewReader(c.body))
			r.Header.Set("Content-Encoding", "gzip")
			if e := decodeContentEncoding(r); e != nil {
				t.Fatal(e)
			}
			g := r.Body.(*gzipBody)
			body, apiErr := relay.ReadBody(r, c.limit)
			switch {
			case c.code == "" && apiErr != nil:
				t.Fatalf("refused: %v", apiErr)
			case c.code != "" && (apiErr == nil || apiErr.Code != c.code):
				t.Fatalf("got %v, want %s", apiErr, c.code)
			}
			if c.code == "" {
				zr, _ := gzip.NewReader(bytes.NewReader(c.body))
				want, _ := io.ReadAll(zr)
				if !bytes.Equal(body, want) {
					t.Fatalf("decoded %d bytes, want the %d of the body", len(body), len(want))
				}
			}
			bound := c.maxDecoded
			if bound == 0 {
				// The ratio's bound, and what one read of the decoder can add past it.
				bound = max(gzipRatioFloor, gzipMaxRatio*int64(len(c.body))) + 2*relay.ReadChunk
			}
			if g.decoded > bound {
				t.Fatalf("decoded %d bytes of a %d-byte upload, want at most %d", g.decoded, len(c.body), bound)
			}
		})
	}
}
