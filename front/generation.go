package front

import (
	"net/http"

	"modelgateway/core/wire/apierror"
	"modelgateway/front/relay"
)

// serveGeneration runs a POST route of the table (routes.go): POST only, key required and
// normalised, admitted within the body budget.
func (s *Server) serveGeneration(w http.ResponseWriter, r *http.Request, h http.Handler) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		relay.WriteError(w, r, apierror.New(apierror.MethodNotAllowed, "%s is not allowed on %s", r.Method, r.URL.Path))
		return
	}
	key := relay.ExtractKey(r)
	if key == "" {
		relay.WriteError(w, r, apierror.New(apierror.InvalidKey, "no API key was provided"))
		return
	}
	relay.SetBearer(r, key)
	r, paced := s.admit(w, r, h)
	if r == nil {
		return
	}
	defer paced.release()
	h.ServeHTTP(w, r)
}
