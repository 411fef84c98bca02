package rpc

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"modelgateway/core/snapshot"
	"modelgateway/core/store"
	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/callmd"
)

// Batch credentials: a batch item runs through the front and core like a live request, with
// the checks of the key that created its batch. The gateway keeps no secret of that key, so
// the item carries a credential of this process instead: the key's id signed with a secret
// made at start-up and never written anywhere. It only ever travels in process (front →
// core); a client cannot make one, and one seen over a socket is worthless on any other
// process.

// batchCredentialPrefix starts every batch credential; no key secret has it.
const batchCredentialPrefix = "gwbatch."

var batchSecret = func() []byte {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("batch credential secret: " + err.Error())
	}
	return b
}()

func batchMAC(keyID string) string {
	m := hmac.New(sha256.New, batchSecret)
	m.Write([]byte(keyID))
	return hex.EncodeToString(m.Sum(nil))
}

// BatchCredential is the credential a batch item of the key presents as its API key.
func BatchCredential(keyID uuid.UUID) string {
	id := keyID.String()
	return batchCredentialPrefix + id + "." + batchMAC(id)
}

// batchKeyID is the key a batch credential stands for; ok is false for anything else.
func batchKeyID(secret string) (uuid.UUID, bool) {
	rest, ok := strings.CutPrefix(secret, batchCredentialPrefix)
	if !ok {
		return uuid.UUID{}, false
	}
	id, mac, ok := strings.Cut(rest, ".")
	if !ok || !hmac.Equal([]byte(mac), []byte(batchMAC(id))) {
		return uuid.UUID{}, false
	}
	u, err := uuid.Parse(id)
	return u, err == nil
}

// authenticate finds the key of a secret: a client's key, or a batch item's credential.
func authenticate(snap *snapshot.Snapshot, secret string) (*snapshot.Key, *apierror.Error) {
	if strings.HasPrefix(secret, batchCredentialPrefix) {
		if id, ok := batchKeyID(secret); ok {
			return snap.AuthenticateID(id)
		}
		return nil, apierror.New(apierror.InvalidKey, "the API key is not valid")
	}
	return snap.Authenticate(secret)
}

// batchItemCall reports whether the call is a batch item's: its prices take the model's
// batch_price_factor.
func batchItemCall(ctx context.Context) bool {
	_, ok := batchKeyID(callmd.Bearer(ctx))
	return ok
}

// batchPriced is the model with its prices times its batch_price_factor: what a batch item
// is held and charged at. The snapshot's model is shared, so a factor other than 1 takes a
// copy.
func batchPriced(m *snapshot.Model) *snapshot.Model {
	f := m.BatchPriceFactor
	if f.Equal(decimal.NewFromInt(1)) {
		return m
	}
	c := *m
	c.Prices = make([]store.Price, len(m.Prices))
	for i, p := range m.Prices {
		for _, a := range []*decimal.NullDecimal{&p.Input, &p.CachedInput, &p.CacheWrite, &p.Output, &p.Request, &p.AudioInput, &p.AudioOutput} {
			if a.Valid {
				a.Decimal = a.Decimal.Mul(f)
			}
		}
		c.Prices[i] = p
	}
	return &c
}
