package simulator

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// directives are the #sim: instructions found in the last user text.
type directives struct {
	fail     int           // HTTP status to fail with, 0 for none
	cut      bool          // stop the stream half way without its terminal event
	cutEOF   bool          // end the body cleanly at the cut instead of dropping the connection
	stall    time.Duration // pause before the second chunk
	delay    time.Duration // extra first-byte delay
	cache    int           // cached input tokens to report
	think    bool          // reasoning part first
	errorMid string        // "" none; otherwise "1" (default), a status, or "failed" (responses)
	words    int           // answer length override
	audio    bool          // realtime: answer with audio
	close    int           // realtime: close the socket with this code after response.created
	flag     string        // moderations: category to flag
	input    int           // input tokens to report instead of the counted ones, 0 for none
	respID   string        // realtime: the response id to use instead of a fresh one
}

var directiveRE = regexp.MustCompile(`#sim:([a-z-]+)(?:=(\S+))?`)

// parseDirectives reads every directive in text; malformed values are ignored so a typo
// yields a normal answer rather than a confusing one.
func parseDirectives(text string) directives {
	var d directives
	for _, m := range directiveRE.FindAllStringSubmatch(text, -1) {
		// Trailing punctuation belongs to the prose around the directive ("#sim:fail=429.").
		name, val := m[1], strings.TrimRight(m[2], ".,;:!?)]}'\"")
		switch name {
		case "fail":
			if n, err := strconv.Atoi(val); err == nil && n >= 400 && n <= 599 {
				d.fail = n
			}
		case "cut":
			d.cut = true
			d.cutEOF = val == "eof"
		case "stall":
			d.stall = parseDur(val)
		case "delay":
			d.delay = parseDur(val)
		case "cache":
			if n, err := strconv.Atoi(val); err == nil && n >= 0 {
				d.cache = n
			}
		case "think":
			d.think = true
		case "error-mid":
			d.errorMid = val
			if val == "" {
				d.errorMid = "1"
			}
		case "words":
			if n, err := strconv.Atoi(val); err == nil && n > 0 && n <= 100000 {
				d.words = n
			}
		case "audio":
			d.audio = true
		case "close":
			if n, err := strconv.Atoi(val); err == nil && sendableCloseCode(n) {
				d.close = n
			}
		case "input":
			if n, err := strconv.Atoi(val); err == nil && n > 0 && n <= 10_000_000 {
				d.input = n
			}
		case "response-id":
			d.respID = val
		case "flag":
			d.flag = val
			if val == "" {
				d.flag = "violence"
			}
		}
	}
	return d
}

func parseDur(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0
	}
	return d
}

// midStatus is the HTTP status a mid-stream error imitates: the value of error-mid when it is
// one, otherwise def.
func (d directives) midStatus(def int) int {
	if n, err := strconv.Atoi(d.errorMid); err == nil && n >= 400 && n <= 599 {
		return n
	}
	return def
}

// sendableCloseCode tells whether a WebSocket close code may appear in a close frame: RFC 6455
// reserves 1004-1006 and 1015 for local use, and codes below 1000 or above 4999 do not exist.
func sendableCloseCode(n int) bool {
	return n >= 1000 && n <= 4999 && (n < 1004 || n > 1006) && n != 1015
}
