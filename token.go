package redlock

import (
	"crypto/rand"
	"encoding/base64"
	"strconv"
	"time"
)

// tokenBytes is the size of the random part of a lock token: 160 bits from the
// CSPRNG, as the Redlock description recommends, so that two acquisitions never
// share a token.
const tokenBytes = 20

// attemptStrings returns what an acquisition attempt on key sends that
// changes with every attempt: a fresh random token, URL-safe base64 without
// padding, the key's
// fencing counter key (fenceKey) and now in microseconds, in decimal. The
// three share one allocation.
func attemptStrings(key string, now time.Time) (token, fenceKey, clock string) {
	var b [tokenBytes]byte
	rand.Read(b[:]) // never returns an error (crypto/rand, Go 1.24+)
	var stack [128]byte
	buf := base64.RawURLEncoding.AppendEncode(stack[:0], b[:])
	endToken := len(buf)
	buf = append(buf, fencePrefix...)
	buf = append(buf, key...)
	endFenceKey := len(buf)
	buf = strconv.AppendInt(buf, now.UnixMicro(), 10)
	s := string(buf)
	return s[:endToken], s[endToken:endFenceKey], s[endFenceKey:]
}
