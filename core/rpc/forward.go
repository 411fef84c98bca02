package rpc

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/billing"
	"modelgateway/core/metering"
	"modelgateway/core/provider"
	"modelgateway/core/snapshot"
	"modelgateway/core/store"
	"modelgateway/core/wire/apierror"
)

const (
	// maxJSONAnswer bounds a forwarded JSON answer, which is read whole to find its usage.
	maxJSONAnswer = 256 << 20
	// chunkSize is the piece a binary answer is forwarded in.
	chunkSize = 32 << 10
	// multipartUnknownSize is assumed for a form of unknown size when holding (spec 8 limit).
	multipartUnknownSize = 25 << 20
	// uploadBytesPerToken estimates the tokens of an uploaded image or audio file for the
	// hold: generous next to what providers bill (an hour of speech or a 4 MB image is a few
	// thousand tokens), never close to the bytes/2 of text.
	uploadBytesPerToken = 1000
)

// Forward implements the RPC of the forwarded routes (media and ranking): checks, price and
// hold on the head, then the first route that answers, the body streamed through, and the
// charge of a complete answer: its reported token usage, or the per-request price.
func (s *CoreServer) Forward(srv corev1.CoreService_ForwardServer) error {
	ctx := srv.Context()
	first, err := srv.Recv()
	if err != nil {
		return err
	}
	head := first.GetHead()
	if head == nil {
		return apierror.New(apierror.InvalidRequest, "the first Forward message must be the head")
	}
	family := head.GetEndpointFamily()
	if _, ok := provider.FamilyPaths[family]; !ok {
		return apierror.New(apierror.InvalidRequest, "Forward does not serve %q", family)
	}
	b, err := s.admit(ctx, family, head.GetModel(), tokenLimit{
		estimate:  func(m *snapshot.Model) int64 { return forwardTokens(m, head) },
		setHeader: srv.SetHeader,
	})
	if err != nil {
		return err
	}
	defer b.finish()
	if head.GetStream() {
		return b.refuse(apierror.New(apierror.StreamingNotSupported, "%s does not stream", family))
	}
	if err := b.checkParameters(head.GetParameters()); err != nil {
		return err
	}
	in, out := forwardEstimate(head)
	if err := b.holdWorstCase(false, in, out); err != nil {
		return err
	}

	var form *formBody
	resp, _, err := firstAnswer(b, func() bool { return form == nil || !form.started }, func(a provider.Adapter, up provider.Upstream) (*http.Response, error) {
		f, ok := a.(provider.Forwarder)
		if !ok {
			return nil, errNoAdapter
		}
		call := &provider.ForwardCall{Upstream: up, Family: family, ContentType: "application/json"}
		if head.GetMultipart() {
			form = newFormBody(srv, head.GetParts(), up.UpstreamModel, head.GetBodySize())
			call.Body, call.ContentType = form, form.contentType()
		} else {
			body, err := provider.SetModel(head.GetBody(), up.UpstreamModel)
			if err != nil {
				return nil, &provider.Error{Status: 400, Message: "the body is not a JSON object"}
			}
			call.Body = bytes.NewReader(body)
		}
		return f.Forward(ctx, call)
	})
	if form != nil && form.err != nil {
		// The client's side failed first (e.g. the upload passed the size limit): its error
		// is the answer, whatever the upstream made of the broken body.
		if resp != nil {
			resp.Body.Close()
		}
		ae := clientError(form.err)
		b.uncharged(ae.Code, "the upload failed: "+ae.Message)
		return ae
	}
	if err != nil {
		b.out.Status = store.StatusUpstreamError
		return err
	}
	defer resp.Body.Close()
	contentType := resp.Header.Get("Content-Type")
	if err := srv.Send(&corev1.ForwardResponse{Msg: &corev1.ForwardResponse_Head{Head: &corev1.ForwardResponseHead{Status: int32(resp.StatusCode), ContentType: contentType}}}); err != nil {
		b.uncharged(store.StatusCancelled, "client went away: "+err.Error())
		return nil
	}
	if heldWhole(contentType) {
		return s.relayJSON(b, srv, head, resp)
	}
	return relayBinary(b, srv, resp)
}

// relayJSON reads the whole answer to find its usage, puts the public model back where the
// answer names one (rerank, moderations), and sends it with its cost.
func (s *CoreServer) relayJSON(b *billed, srv corev1.CoreService_ForwardServer, head *corev1.ForwardHead, resp *http.Response) error {
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJSONAnswer))
	if err != nil {
		b.uncharged(store.StatusUpstreamError, "reading the answer: "+err.Error())
		return upstreamError(err)
	}
	u := metering.FromMediaAnswer(b.out.EndpointFamily, body)
	if !u.Reliable && b.out.EndpointFamily == "moderations" && s.Deps.TextCounter != nil {
		u = metering.Usage{Input: s.Deps.TextCounter(moderationTexts(head.GetBody())), Reliable: true}
	}
	body = provider.PublicAnswerModel(body, "", b.m.ID)
	return sendAnswer(b, srv, body, u)
}

// relayBinary streams an answer (speech audio) as it arrives; only a complete one is charged,
// and such answers carry no usage: they are priced per request.
func relayBinary(b *billed, srv corev1.CoreService_ForwardServer, resp *http.Response) error {
	buf := make([]byte, chunkSize)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if serr := srv.Send(&corev1.ForwardResponse{Msg: &corev1.ForwardResponse_Data{Data: bytes.Clone(buf[:n])}}); serr != nil {
				b.uncharged(store.StatusCancelled, "client went away: "+serr.Error())
				return nil
			}
		}
		if errors.Is(err, io.EOF) {
			return sendAnswer(b, srv, nil, metering.Unreliable("a binary answer reports no usage"))
		}
		if err != nil {
			status := store.StatusUpstreamError
			if b.ctx.Err() != nil {
				status = store.StatusCancelled
			}
			b.uncharged(status, "answer cut: "+err.Error())
			return nil // the status line has gone: the front ends the answer
		}
	}
}

// sendAnswer charges the complete answer and sends what is left of it, then its usage.
func sendAnswer(b *billed, srv corev1.CoreService_ForwardServer, body []byte, u metering.Usage) error {
	b.charge(u)
	if err := b.settle(); err != nil {
		return err
	}
	if body != nil {
		if err := srv.Send(&corev1.ForwardResponse{Msg: &corev1.ForwardResponse_Data{Data: body}}); err != nil {
			b.uncharged(store.StatusCancelled, "client went away: "+err.Error())
			return nil
		}
	}
	um := usageMessage(b.out.Usage)
	um.Cost, um.Currency = b.costString()
	_ = srv.Send(&corev1.ForwardResponse{Msg: &corev1.ForwardResponse_Usage{Usage: um}})
	return nil
}

// forwardEstimate is the token estimate behind a hold: text bodies at bytes/2, uploaded files
// at uploadBytesPerToken, and a full default output where the answer is generated media.
func forwardEstimate(head *corev1.ForwardHead) (input, output int64) {
	if head.GetMultipart() {
		size := head.GetBodySize()
		if size < 0 {
			size = multipartUnknownSize
		}
		input = size/uploadBytesPerToken + billing.InputEstimate(0)
		for _, p := range head.GetParts() {
			input += int64(len(p.GetValue())) / 2
		}
	} else {
		input = billing.InputEstimate(len(head.GetBody()))
	}
	switch head.GetEndpointFamily() {
	case "rerank", "moderations":
	default:
		output = billing.DefaultOutputTokens
	}
	return input, output
}

// forwardTokens is what a forwarded request counts against its key's max_tokens_per_minute
// at admission. Priced per token (rerank, moderations, images, transcriptions, speech), its
// hold is sized in tokens: the same estimate counts (forwardEstimate), corrected to the
// answer's reported usage by its charge (and given back when none is reported, as for a
// generation). Priced per request, neither its hold nor its charge says anything of tokens,
// and an estimate would be invented (a full default output for an image that may report
// none): it counts the least, one token, so it is refused only while the key's minute is
// already full, and the tokens its answer reports (an image model's usage) count when it is
// charged.
// Without a price it counts nothing: the hold refuses it.
func forwardTokens(m *snapshot.Model, head *corev1.ForwardHead) int64 {
	p, err := billing.Find(m.Prices, head.GetEndpointFamily(), false)
	if err != nil || p.PerRequest {
		return 0
	}
	in, out := forwardEstimate(head)
	return in + out
}

// moderationTexts are the texts of a moderations request, measured when the upstream reports
// no usage.
func moderationTexts(body []byte) []string {
	var texts []string
	in := gjson.GetBytes(body, "input")
	if in.Type == gjson.String {
		return []string{in.String()}
	}
	in.ForEach(func(_, v gjson.Result) bool {
		if v.Type == gjson.String {
			texts = append(texts, v.String())
		} else if t := v.Get("text"); t.Exists() {
			texts = append(texts, t.String())
		}
		return true
	})
	return texts
}

// heldWhole tells the answers that are read whole (JSON, and the text formats of
// transcriptions) from those streamed as they arrive (audio).
func heldWhole(contentType string) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	return mt == "application/json" || strings.HasSuffix(mt, "+json") || strings.HasPrefix(mt, "text/")
}

// clientError is what a failure of the client's side of the stream becomes.
func clientError(err error) *apierror.Error {
	var ae *apierror.Error
	if errors.As(err, &ae) {
		return ae
	}
	return apierror.New(apierror.InvalidRequest, "reading the request body: %v", err)
}
