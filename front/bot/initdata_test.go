package bot

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

const testToken = "123456:TEST-bot-token-never-logged"

// signInitData builds initData the way Telegram does, written out independently of
// verifyInitData from the documented recipe, so a mistake in one is not copied into the other.
func signInitData(t *testing.T, token string, fields map[string]string) string {
	t.Helper()
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var dcs []string
	q := url.Values{}
	for _, k := range keys {
		dcs = append(dcs, k+"="+fields[k])
		q.Set(k, fields[k])
	}
	secret := hmac.New(sha256.New, []byte("WebAppData"))
	secret.Write([]byte(token))
	h := hmac.New(sha256.New, secret.Sum(nil))
	h.Write([]byte(strings.Join(dcs, "\n")))
	q.Set("hash", hex.EncodeToString(h.Sum(nil)))
	return q.Encode()
}

func TestVerifyInitData(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	fresh := strconv.FormatInt(now.Add(-time.Hour).Unix(), 10)
	user := `{"id":101,"first_name":"Ann","last_name":"","username":"ann","language_code":"en"}`
	good := map[string]string{"query_id": "AAH", "user": user, "auth_date": fresh, "signature": "sig"}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range good {
			m[a] = b
		}
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	valid := signInitData(t, testToken, good)
	// The Telegram documentation's example form: fields in any order, values URL-encoded.
	tampered := strings.Replace(valid, "%22id%22%3A101", "%22id%22%3A202", 1)
	if tampered == valid {
		t.Fatal("the user id was not found in the initData to tamper with")
	}
	for _, tc := range []struct {
		name     string
		initData string
		want     error
		id       int64
	}{
		{"valid", valid, nil, 101},
		{"valid at 23 h 59 min", signInitData(t, testToken, with("auth_date", strconv.FormatInt(now.Add(-24*time.Hour+time.Minute).Unix(), 10))), nil, 101},
		{"another user id under the same hash", tampered, errInitDataForged, 0},
		{"signed with another bot's token", signInitData(t, "654321:OTHER", good), errInitDataForged, 0},
		{"hash not hex", strings.Replace(valid, "hash=", "hash=zz", 1), errInitDataForged, 0},
		{"no hash", url.Values{"user": {user}, "auth_date": {fresh}}.Encode(), errInitDataMalformed, 0},
		{"a field twice", valid + "&auth_date=" + fresh, errInitDataMalformed, 0},
		{"stale: 24 h and a minute", signInitData(t, testToken, with("auth_date", strconv.FormatInt(now.Add(-24*time.Hour-time.Minute).Unix(), 10))), errInitDataStale, 0},
		{"from the future", signInitData(t, testToken, with("auth_date", strconv.FormatInt(now.Add(time.Hour).Unix(), 10))), errInitDataStale, 0},
		{"no auth_date", signInitData(t, testToken, with("auth_date", "")), errInitDataStale, 0},
		{"missing user", signInitData(t, testToken, with("user", "")), errInitDataNoUser, 0},
		{"user without id", signInitData(t, testToken, with("user", `{"first_name":"Ann"}`)), errInitDataNoUser, 0},
		{"empty", "", errInitDataMalformed, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := verifyInitData(tc.initData, testToken, now)
			if err != tc.want {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			if tc.want == nil && (u == nil || u.ID != tc.id || u.name() != "Ann") {
				t.Fatalf("user %+v, want id %d named Ann", u, tc.id)
			}
		})
	}
}
