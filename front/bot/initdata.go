package bot

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// initDataMaxAge is how old a Mini App's initData may be: a leaked string (a log, a shared
// screenshot) stops opening the account after a day.
const initDataMaxAge = 24 * time.Hour

// webAppUser is the Telegram user an initData string vouches for.
type webAppUser struct {
	ID        int64  `json:"id"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name"`
	Username  string `json:"username"`
}

func (u *webAppUser) name() string {
	if n := strings.TrimSpace(u.FirstName + " " + u.LastName); n != "" {
		return n
	}
	return u.Username
}

// Why an initData string is refused; the API answers each with 401 and no detail beyond it.
var (
	errInitDataMalformed = errors.New("initData is not a query string with a hash")
	errInitDataForged    = errors.New("initData hash does not match")
	errInitDataStale     = errors.New("initData is older than 24 h")
	errInitDataNoUser    = errors.New("initData names no user")
)

// verifyInitData checks a Mini App's initData as Telegram documents it ("Validating data
// received via the Mini App"): secret_key = HMAC-SHA-256(key "WebAppData", msg bot token);
// the data-check-string is every field but hash, as key=value, sorted by key, joined by
// "\n"; hash = hex(HMAC-SHA-256(key secret_key, msg data-check-string)). The hash is checked
// first, so nothing of a forged string is believed; then auth_date (at most 24 h old, and not
// from the future beyond clock skew) and the user, whose id is the only identity the API uses.
func verifyInitData(initData, botToken string, now time.Time) (*webAppUser, error) {
	vals, err := url.ParseQuery(initData)
	if err != nil || len(vals["hash"]) != 1 {
		return nil, errInitDataMalformed
	}
	got, err := hex.DecodeString(vals.Get("hash"))
	if err != nil {
		return nil, errInitDataForged
	}
	lines := make([]string, 0, len(vals))
	for k, vs := range vals {
		if k == "hash" {
			continue
		}
		if len(vs) != 1 {
			// A repeated field has no single value the hash could have covered.
			return nil, errInitDataMalformed
		}
		lines = append(lines, k+"="+vs[0])
	}
	sort.Strings(lines)
	if !hmac.Equal(got, initDataHash(strings.Join(lines, "\n"), botToken)) {
		return nil, errInitDataForged
	}
	sec, err := strconv.ParseInt(vals.Get("auth_date"), 10, 64)
	if err != nil {
		return nil, errInitDataStale
	}
	at := time.Unix(sec, 0)
	if now.Sub(at) > initDataMaxAge || at.Sub(now) > 5*time.Minute {
		return nil, errInitDataStale
	}
	var u webAppUser
	if raw := vals.Get("user"); raw == "" || json.Unmarshal([]byte(raw), &u) != nil || u.ID <= 0 {
		return nil, errInitDataNoUser
	}
	return &u, nil
}

func initDataHash(dataCheckString, botToken string) []byte {
	k := hmac.New(sha256.New, []byte("WebAppData"))
	k.Write([]byte(botToken))
	m := hmac.New(sha256.New, k.Sum(nil))
	m.Write([]byte(dataCheckString))
	return m.Sum(nil)
}
