package contentgen

import (
	"math"
	"strconv"
	"strings"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/geminiwire"
	"modelgateway/core/wire/strictjson"
)

// Endpoint family and path actions of the embed routes (contract.md).
const (
	FamilyEmbed = "content.embed"

	ActionEmbed      = "embedContent"
	ActionBatchEmbed = "batchEmbedContents"
)

// embedContentRequest is an :embedContent body and each request of a :batchEmbedContents
// body. The REST API is proto3 JSON: both spellings of a field are accepted, not both at once.
type embedContentRequest struct {
	Model                string
	Content              *geminiwire.Content
	TaskType, Title      string
	OutputDimensionality *int64
}

func (e *embedContentRequest) UnmarshalJSON(b []byte) error {
	var w struct {
		Model                 string              `json:"model"`
		Content               *geminiwire.Content `json:"content"`
		TaskType              *string             `json:"taskType"`
		TaskTypeS             *string             `json:"task_type"`
		Title                 *string             `json:"title"`
		OutputDimensionality  *int64              `json:"outputDimensionality"`
		OutputDimensionalityS *int64              `json:"output_dimensionality"`
	}
	if err := strictjson.Unmarshal(b, &w); err != nil {
		return err
	}
	task, err := oneSpelling("taskType", "task_type", w.TaskType, w.TaskTypeS)
	if err != nil {
		return err
	}
	dims, err := oneSpelling("outputDimensionality", "output_dimensionality", w.OutputDimensionality, w.OutputDimensionalityS)
	if err != nil {
		return err
	}
	*e = embedContentRequest{Model: w.Model, Content: w.Content, OutputDimensionality: dims}
	if task != nil {
		e.TaskType = *task
	}
	if w.Title != nil {
		e.Title = *w.Title
	}
	return nil
}

// oneSpelling returns whichever spelling is set; both set is an error, as upstream.
func oneSpelling[T any](camel, snake string, c, s *T) (*T, error) {
	switch {
	case c != nil && s != nil:
		return nil, &geminiwire.ErrBothSpellings{Camel: camel, Snake: snake}
	case c != nil:
		return c, nil
	}
	return s, nil
}

type batchEmbedContentsRequest struct {
	Model    string                `json:"model"`
	Requests []embedContentRequest `json:"requests"`
}

// decodeEmbed checks an embed body against the path model and converts it. The options of a
// batch come from its first request (taskType and title only matter to a content-generation
// upstream, which gets the raw body); the vector size must be the same for all, since a
// translated call asks for one size.
func decodeEmbed(path string, body []byte) (*corev1.EmbedRequest, *apierror.Error) {
	model, action, ok := SplitPath(path)
	if !ok || (action != ActionEmbed && action != ActionBatchEmbed) {
		return nil, apierror.New(apierror.InvalidRequest, "%s is not an embed path; use /v1beta/models/{model}:embedContent or :batchEmbedContents", path)
	}
	var bodyModel string
	var reqs []embedContentRequest
	var names []string // where each request is in the body, for messages
	if action == ActionEmbed {
		var one embedContentRequest
		if err := strictjson.Unmarshal(body, &one); err != nil {
			return nil, bodyError(err)
		}
		bodyModel, reqs, names = one.Model, []embedContentRequest{one}, []string{""}
	} else {
		var batch batchEmbedContentsRequest
		if err := strictjson.Unmarshal(body, &batch); err != nil {
			return nil, bodyError(err)
		}
		if len(batch.Requests) == 0 {
			return nil, apierror.New(apierror.InvalidRequest, "requests is required and must not be empty")
		}
		bodyModel, reqs = batch.Model, batch.Requests
		for i, r := range reqs {
			names = append(names, "requests["+strconv.Itoa(i)+"].")
			if bareModel(r.Model) != model {
				return nil, apierror.New(apierror.InvalidRequest, "requests[%d].model %q does not name the model %q in the path", i, r.Model, model)
			}
		}
	}
	if bodyModel != "" && bareModel(bodyModel) != model {
		return nil, apierror.New(apierror.InvalidRequest, "the body's model %q does not match the model %q in the path", bodyModel, model)
	}
	out := &corev1.EmbedRequest{
		EndpointFamily: FamilyEmbed,
		Protocol:       corev1.Protocol_PROTOCOL_CONTENT_GENERATION,
		Model:          model,
		RawBody:        body,
		Batch:          action == ActionBatchEmbed,
		TaskType:       reqs[0].TaskType,
		Title:          reqs[0].Title,
		Texts:          make([]string, len(reqs)),
	}
	for i, r := range reqs {
		text, apiErr := embedText(r.Content, names[i])
		if apiErr != nil {
			return nil, apiErr
		}
		out.Texts[i] = text
		d := r.OutputDimensionality
		if first := reqs[0].OutputDimensionality; (d == nil) != (first == nil) || d != nil && *d != *first {
			return nil, apierror.New(apierror.InvalidRequest, "every request of a batch must ask for the same outputDimensionality")
		}
	}
	if d := reqs[0].OutputDimensionality; d != nil {
		if *d < 1 || *d > math.MaxInt32 {
			return nil, apierror.New(apierror.InvalidRequest, "%soutputDimensionality must be a positive integer", names[0])
		}
		n := int32(*d)
		out.Dimensions = &n
	}
	return out, nil
}

// embedText is the text a content embeds: its text parts joined as they come (parts of one
// content are pieces of one text, the way streamed answers split it).
func embedText(c *geminiwire.Content, at string) (string, *apierror.Error) {
	if c == nil {
		return "", apierror.New(apierror.InvalidRequest, "%scontent is required", at)
	}
	var b strings.Builder
	for _, p := range c.Parts {
		if p.Text != nil {
			b.WriteString(*p.Text)
		}
	}
	if b.Len() == 0 {
		return "", apierror.New(apierror.InvalidRequest, "%scontent has no text to embed", at)
	}
	return b.String(), nil
}
