package batches_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"modelgateway/core/gatewaytest"
)

func TestMain(m *testing.M) { gatewaytest.Main(m) }

func sdk(g *gatewaytest.Gen, key string) openai.Client {
	return openai.NewClient(option.WithBaseURL(g.Base+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
}

// TestFilesRoundTrip: openai-go's upload (purpose after the file part) stores the bytes; get,
// list, content and delete answer OpenAI's shapes; another profile's key sees none of it.
func TestFilesRoundTrip(t *testing.T) {
	t.Parallel()
	g := gatewaytest.StartGen(t, gatewaytest.Options{})
	ctx := context.Background()
	c := sdk(g, g.Key)
	// Larger than a stored chunk (1 MiB) and than one upload message, not a multiple of either.
	content := bytes.Repeat([]byte(`{"custom_id":"x","method":"POST","url":"/v1/chat/completions","body":{}}`+"\n"), 40000)
	f, err := c.Files.New(ctx, openai.FileNewParams{File: openai.File(bytes.NewReader(content), "in.jsonl", "application/jsonl"), Purpose: openai.FilePurposeBatch})
	if err != nil {
		t.Fatalf("Files.New: %v", err)
	}
	if !strings.HasPrefix(f.ID, "file-") || f.Bytes != int64(len(content)) || f.Filename != "in.jsonl" || f.Purpose != "batch" || f.Status != "processed" {
		t.Fatalf("file object = %+v", f)
	}
	got, err := c.Files.Get(ctx, f.ID)
	if err != nil || got.ID != f.ID || got.Bytes != f.Bytes {
		t.Fatalf("Files.Get = %+v, %v", got, err)
	}
	resp, err := c.Files.Content(ctx, f.ID)
	if err != nil {
		t.Fatalf("Files.Content: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Equal(body, content) {
		t.Fatalf("content: %d bytes back of %d, equal %v", len(body), len(content), bytes.Equal(body, content))
	}
	second, err := c.Files.New(ctx, openai.FileNewParams{File: openai.File(strings.NewReader("{}\n"), "b.jsonl", "application/jsonl"), Purpose: openai.FilePurposeBatch})
	if err != nil {
		t.Fatalf("second upload: %v", err)
	}
	// Newest first; the SDK's auto-pager follows after= with limit 1.
	var ids []string
	iter := c.Files.ListAutoPaging(ctx, openai.FileListParams{Limit: openai.Int(1)})
	for iter.Next() {
		ids = append(ids, iter.Current().ID)
	}
	if err := iter.Err(); err != nil || len(ids) != 2 || ids[0] != second.ID || ids[1] != f.ID {
		t.Fatalf("listed %v (%v), want [%s %s]", ids, err, second.ID, f.ID)
	}

	// Another profile: 404 on every route of the first one's file, and an empty list.
	other, _ := g.NewProfile("", "10")
	oc := sdk(g, other)
	if _, err := oc.Files.Get(ctx, f.ID); !isStatus(err, 404) {
		t.Errorf("other profile's Get = %v, want 404", err)
	}
	for _, m := range []string{"GET /content", "DELETE "} {
		method, suffix, _ := strings.Cut(m, " ")
		status, _, raw, err := g.Raw(method, "/v1/files/"+f.ID+suffix, gatewaytest.Bearer(other), "")
		if err != nil || status != 404 {
			t.Errorf("other profile's %s: %d %s", m, status, raw)
		}
	}
	if page, err := oc.Files.List(ctx, openai.FileListParams{}); err != nil || len(page.Data) != 0 {
		t.Errorf("other profile's list = %v, %v", page, err)
	}

	del, err := c.Files.Delete(ctx, f.ID)
	if err != nil || !del.Deleted || del.ID != f.ID {
		t.Fatalf("Files.Delete = %+v, %v", del, err)
	}
	if _, err := c.Files.Get(ctx, f.ID); !isStatus(err, 404) {
		t.Errorf("deleted file Get = %v, want 404", err)
	}
}

// TestFilesRefusals: a wrong purpose, a missing file part, a file over the limit, a key
// without the files family, the profile's quota.
func TestFilesRefusals(t *testing.T) {
	t.Parallel()
	g := gatewaytest.StartGen(t, gatewaytest.Options{Env: []string{"GATEWAY_FILES_MAX_BYTES=1000", "GATEWAY_FILES_QUOTA_BYTES=1500"}})
	ctx := context.Background()
	c := sdk(g, g.Key)
	upload := func(n int) error {
		_, err := c.Files.New(ctx, openai.FileNewParams{File: openai.File(bytes.NewReader(bytes.Repeat([]byte("a"), n)), "f", "application/octet-stream"), Purpose: openai.FilePurposeBatch})
		return err
	}
	if err := upload(1000); err != nil {
		t.Fatalf("upload at the limit: %v", err)
	}
	if err := upload(1001); !isStatus(err, 413) {
		t.Errorf("upload over the limit = %v, want 413", err)
	}
	if err := upload(600); !isStatus(err, 413) {
		t.Errorf("upload past the quota = %v, want 413", err)
	}
	if err := upload(500); err != nil {
		t.Errorf("upload that fits the quota: %v", err)
	}
	_, err := c.Files.New(ctx, openai.FileNewParams{File: openai.File(strings.NewReader("x"), "f", "application/octet-stream"), Purpose: openai.FilePurposeAssistants})
	if !isStatus(err, 400) {
		t.Errorf("purpose assistants = %v, want 400", err)
	}
	status, _, raw, _ := g.Raw("POST", "/v1/files", map[string]string{"Authorization": "Bearer " + g.Key,
		"Content-Type": "multipart/form-data; boundary=b"}, "--b\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n--b--\r\n")
	if status != 400 {
		t.Errorf("no file part: %d %s", status, raw)
	}
	pid := g.ProfileID
	k := g.Admin("POST", "/admin/v1/profiles/"+pid+"/keys", `{"name":"chat","allowed_endpoints":["chat.completions"],"allowed_models":["*"]}`)
	kc := sdk(g, k["secret"].(string))
	if _, err := kc.Files.List(ctx, openai.FileListParams{}); !isStatus(err, 403) {
		t.Errorf("key without files = %v, want 403", err)
	}
}

func isStatus(err error, status int) bool {
	var apiErr *openai.Error
	return errors.As(err, &apiErr) && apiErr.StatusCode == status
}

// readLines reads a JSONL body, failing on a blank or non-JSON line (both SDKs do).
func readLines(t *testing.T, resp *http.Response) []map[string]any {
	t.Helper()
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read lines: %v", err)
	}
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}
