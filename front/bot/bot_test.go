package bot

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	tgbot "github.com/go-telegram/bot"
)

const token = "42:SECRET-token"

func TestClassifyKeepsTheTokenOut(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"a network error names the URL with the token", &url.Error{Op: "Post", URL: "https://api.telegram.org/bot" + token + "/sendMessage", Err: errors.New("dial tcp: connection refused")}, "network: dial tcp: connection refused"},
		{"an inner error quoting the token is redacted", &url.Error{Op: "Post", URL: "x", Err: fmt.Errorf("bad host in bot%s", token)}, "network: bad host in bot<token>"},
		{"a 429 keeps retry_after", &tgbot.TooManyRequestsError{Message: "too many requests, Too Many Requests: retry after 3", RetryAfter: 3}, "429 too many requests"},
		{"a 400 drops Telegram's description", fmt.Errorf("%w, Bad Request: can't parse entities in <code>sk-secret</code>", tgbot.ErrorBadRequest), "400 bad request"},
		{"an unknown error says nothing of its text", errors.New("error decode response body for method sendMessage, sk-secret-body"), "failed"},
		{"a timeout", context.DeadlineExceeded, "timed out or canceled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := classify("sendMessage", tc.err, token).Error()
			if !strings.HasSuffix(got, tc.want) || strings.Contains(got, token) || strings.Contains(got, "sk-secret") {
				t.Fatalf("classify = %q, want ...%q without the token or a secret", got, tc.want)
			}
		})
	}
}

func TestSessionChoices(t *testing.T) {
	t.Parallel()
	opts := []string{"chat.completions", "messages", "responses"}
	all, chosen := choose(opts, []string{"*"})
	s := &session{Families: opts, AllFamilies: all, Family: chosen}
	if got := selection(s.AllFamilies, s.Families, s.Family); !slices.Equal(got, []string{"*"}) {
		t.Fatalf("default selection %v, want [*]", got)
	}
	s.toggle('e', "1") // leaving "all" keeps every other one
	if got := selection(s.AllFamilies, s.Families, s.Family); !slices.Equal(got, []string{"chat.completions", "responses"}) {
		t.Fatalf("after dropping messages: %v", got)
	}
	for _, bad := range []string{"3", "-1", "x", ""} {
		if s.toggle('e', bad) {
			t.Fatalf("toggle(%q) accepted an index outside the options", bad)
		}
	}
	s.toggle('e', "a")
	if got := selection(s.AllFamilies, s.Families, s.Family); !slices.Equal(got, []string{"*"}) {
		t.Fatalf("after all: %v", got)
	}
	if all, chosen := choose(opts, []string{"messages", "gone"}); all || !slices.Equal(chosen, []bool{false, true, false}) {
		t.Fatalf("choose of an explicit list: %v %v", all, chosen)
	}
}

func TestLimiterAllowsFivePerWindowPerUserAndAction(t *testing.T) {
	t.Parallel()
	l := newLimiter()
	for i := range 5 {
		if !l.allow(1, "create") {
			t.Fatalf("create %d refused", i+1)
		}
	}
	if l.allow(1, "create") {
		t.Fatal("sixth create allowed")
	}
	if !l.allow(1, "rotate") || !l.allow(2, "create") {
		t.Fatal("the limit of one user's creations spilled onto another action or user")
	}
}
