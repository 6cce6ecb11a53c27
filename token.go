package redlock

import (
	"crypto/rand"
	"encoding/base64"
)

// tokenBytes is the size of the random part of a lock token: 160 bits from the
// CSPRNG, as the Redlock description recommends, so that two acquisitions never
// share a token.
const tokenBytes = 20

// newToken returns a fresh random token, URL-safe base64 without padding.
func newToken() string {
	var b [tokenBytes]byte
	rand.Read(b[:]) // never returns an error (crypto/rand, Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}
