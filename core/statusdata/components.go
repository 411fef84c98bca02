// Package statusdata measures what the public status site shows: every outcome the gateway
// records is counted per status component and minute into PostgreSQL (so every replica reads
// the same numbers), rolled up per day for the history bars, and read back as states. A state
// without data is "no_data", never a made-up success.
package statusdata

import (
	"math"
	"slices"
	"strings"
	"time"

	"modelgateway/core/store"
	"modelgateway/core/wire/apierror"
)

// States of a component, a day or a (model, endpoint family), in the words of the Statuspage
// summary.json, plus NoData.
const (
	Operational         = "operational"
	DegradedPerformance = "degraded_performance"
	PartialOutage       = "partial_outage"
	MajorOutage         = "major_outage"
	NoData              = "no_data"
)

// Window is how far back the live numbers of a component look.
const Window = 30 * time.Minute

// HistoryDays is the length of the history bars.
const HistoryDays = 90

// BotSilence is how long without a health report turns the chat bot into a major outage.
const BotSilence = 2 * time.Minute

// Component ids that are not protocol families.
const (
	AdminAPI = "admin-api"
	ChatBot  = "chat-bot"
)

// Component is one line of the status page.
type Component struct {
	ID, Name, Description string
	// Families are the endpoint families (contract.md) whose requests count for it.
	Families []string
}

// Components are the lines of the status page, in page order: one per client protocol
// family, then the admin API and the chat bot.
var Components = []Component{
	{ID: "chat-completions", Name: "Chat completions", Families: []string{"chat.completions", "completions"}},
	{ID: "responses", Name: "Responses", Families: []string{"responses", "responses.compact"}},
	{ID: "messages", Name: "Messages", Families: []string{"messages", "messages.count_tokens"}},
	{ID: "content-generation", Name: "Content generation", Families: []string{"content.generate", "content.count_tokens", "content.embed"}},
	{ID: "embeddings", Name: "Embeddings, rerank, moderation", Families: []string{"embeddings", "rerank", "moderations"}},
	{ID: "images", Name: "Images", Families: []string{"images.generations", "images.edits", "images.variations"}},
	{ID: "audio", Name: "Audio", Families: []string{"audio.speech", "audio.transcriptions", "audio.translations"}},
	{ID: "realtime", Name: "Realtime", Families: []string{"realtime"}},
	{ID: AdminAPI, Name: "Admin API", Description: "the operator API under /admin/v1 and its gRPC service"},
	{ID: ChatBot, Name: "Chat bot", Description: "the chat bot that issues keys; operational while its health reports arrive"},
}

func init() {
	for i, c := range Components {
		if c.Description == "" {
			Components[i].Description = "endpoint families " + strings.Join(c.Families, ", ")
		}
	}
}

// ComponentOf is the component an endpoint family counts for; "" for none.
func ComponentOf(family string) string {
	for _, c := range Components {
		for _, f := range c.Families {
			if f == family {
				return c.ID
			}
		}
	}
	return ""
}

// IsComponent reports whether id names a component.
func IsComponent(id string) bool {
	for _, c := range Components {
		if c.ID == id {
			return true
		}
	}
	return false
}

// serverFailures are the outcome statuses that count against a component. Everything else
// that is not "ok" was caused by the client (key, balance, policy, bad input, a client that
// went away) and does not count at all.
var serverFailures = map[string]bool{
	apierror.UpstreamError:      true,
	apierror.UpstreamTimeout:    true,
	apierror.PricingUnavailable: true,
	apierror.Unavailable:        true,
	apierror.Internal:           true,
}

// Classify says whether an outcome status counts for its component and, if so, whether it
// is a success.
func Classify(status string) (counts, ok bool) {
	switch {
	case status == "ok":
		return true, true
	case serverFailures[status]:
		return true, false
	}
	return false, false
}

// LatencyBounds are the upper bounds, in milliseconds, of the latency histogram's buckets;
// one more bucket holds everything slower. Stored as an array column whose counts replicas
// add, so the bounds are part of the schema: append, never change.
var LatencyBounds = []float64{10, 25, 50, 75, 100, 150, 250, 400, 600, 1000, 1500, 2500, 4000, 6000, 10000, 15000, 25000, 40000, 60000, 120000}

// bucket is the histogram bucket of a latency.
func bucket(d time.Duration) int {
	ms := float64(d) / float64(time.Millisecond)
	for i, b := range LatencyBounds {
		if ms <= b {
			return i
		}
	}
	return len(LatencyBounds)
}

// Quantile is the upper bound of the bucket the q-quantile falls in (the last finite bound
// for the overflow bucket); NaN for an empty histogram.
func Quantile(hist []int64, q float64) float64 {
	var total int64
	for _, n := range hist {
		total += n
	}
	if total == 0 {
		return math.NaN()
	}
	rank := int64(math.Ceil(q * float64(total)))
	rank = max(rank, 1)
	var seen int64
	for i, n := range hist {
		seen += n
		if seen >= rank {
			return LatencyBounds[min(i, len(LatencyBounds)-1)]
		}
	}
	return LatencyBounds[len(LatencyBounds)-1]
}

// State turns counts into a state by success ratio: at least 99 % operational, 95 %
// degraded, 75 % partial outage, below that a major outage; nothing counted is no data.
func State(ok, failed int64) string {
	n := ok + failed
	if n == 0 {
		return NoData
	}
	r := float64(ok) / float64(n)
	switch {
	case r >= 0.99:
		return Operational
	case r >= 0.95:
		return DegradedPerformance
	case r >= 0.75:
		return PartialOutage
	}
	return MajorOutage
}

// A component is shown degraded or out only on enough evidence (contract.md, "Status site
// and docs"): two upstream failures in nine requests are noise, not a partial outage of a
// whole protocol family.
const (
	// MinRequests is how many counted requests a window needs before its ratio is trusted.
	MinRequests = 20
	// MinFailuresInARow is how many failures with no success after them show a fault even
	// below MinRequests: a family that fails every request is out, however quiet it is.
	MinFailuresInARow = 5
)

// ComponentState is State for a component or a day: below MinRequests and MinFailuresInARow
// the few requests there were count as operational, never as degraded or out.
func ComponentState(ok, failed, failuresInARow int64) string {
	if ok+failed > 0 && ok+failed < MinRequests && failuresInARow < MinFailuresInARow {
		return Operational
	}
	return State(ok, failed)
}

// FailuresInARow is how many of the newest counted requests failed with no success after
// them, from per-minute counts (any order). The order inside a minute is not kept, so a
// minute with a success ends the run: the count is a lower bound, and a fault is never
// shown on a run the numbers cannot prove.
func FailuresInARow(minutes []store.StatusMinute) int64 {
	sorted := slices.SortedFunc(slices.Values(minutes), func(a, b store.StatusMinute) int { return b.Minute.Compare(a.Minute) })
	var run int64
	for _, m := range sorted {
		if m.OK > 0 {
			break
		}
		run += m.Failed
	}
	return run
}

// Severity orders states for the page's overall state: no data and operational are 0.
func Severity(state string) int {
	switch state {
	case DegradedPerformance:
		return 1
	case PartialOutage:
		return 2
	case MajorOutage:
		return 3
	}
	return 0
}
