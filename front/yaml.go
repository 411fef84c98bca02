package front

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"strconv"

	"modelgateway/core/wire/yamljson"
)

func isYAML(contentType string) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	switch mt {
	case "application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml":
		return true
	}
	return false
}

// yamlToJSON lets operators post the catalogue document as YAML, as they write it; the RPC
// behind the route takes JSON.
func yamlToJSON(r *http.Request) error {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	js, err := yamljson.Convert(raw)
	if err != nil {
		return err
	}
	r.Body = io.NopCloser(bytes.NewReader(js))
	r.ContentLength = int64(len(js))
	r.Header.Set("Content-Length", strconv.Itoa(len(js)))
	r.Header.Set("Content-Type", "application/json")
	return nil
}
