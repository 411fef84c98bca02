// Package keys makes API key secrets and their hashes. Only the hash is ever stored; the
// prefix shown to operators identifies a key without being enough to use it.
package keys

import (
	"crypto/rand"
	"crypto/sha256"
	"math/big"
)

const (
	// Marker that lets secret scanners and people recognise a gateway key.
	marker      = "sk-gw-"
	alphabet    = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	randomChars = 43 // 43 base62 characters ≈ 256 bits
	// PrefixLen is the number of leading characters shown as the key's prefix: the 6 of the
	// marker plus 6 random characters (~36 bits), enough to tell keys apart, far too few to
	// guess. A literal: keys already issued show prefixes of this length.
	PrefixLen = 12
)

// Secret is a fresh key secret, its display prefix and its SHA-256 hash.
type Secret struct {
	Plain  string
	Prefix string
	Hash   [32]byte
}

// New makes a random secret.
func New() (Secret, error) {
	b := make([]byte, 0, len(marker)+randomChars)
	b = append(b, marker...)
	max := big.NewInt(int64(len(alphabet)))
	for range randomChars {
		n, err := rand.Int(rand.Reader, max)
		if err != nil {
			return Secret{}, err
		}
		b = append(b, alphabet[n.Int64()])
	}
	plain := string(b)
	return Secret{Plain: plain, Prefix: plain[:PrefixLen], Hash: Hash(plain)}, nil
}

// Hash is the stored form of a secret. A fast hash is right here: secrets are 256-bit random,
// so there is nothing to brute-force, and it runs on every request.
func Hash(plain string) [32]byte {
	// The bytes of a secret of ordinary length are copied into a buffer on the stack: the
	// conversion []byte(plain) allocates on the heap for anything over 32 bytes.
	var buf [128]byte
	if len(plain) <= len(buf) {
		return sha256.Sum256(append(buf[:0], plain...))
	}
	return sha256.Sum256([]byte(plain))
}
