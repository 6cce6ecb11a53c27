// Package wire defines what the library puts on the nodes: the names of the
// keys and channels it keeps beside each lock key, where they go on a Redis
// Cluster, the lock tokens, and the Lua scripts that act on them. Every name
// is built here and nowhere else.
package wire

import (
	"crypto/rand"
	"encoding/base64"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redlock-go/redlock/internal/hashslot"
)

// The names the library uses on every node beside the lock keys, which are
// the names given (plus Options.KeyPrefix), as redsync and node-redlock
// write them.

// KeyPrefix begins every key and channel the library names beside the lock
// keys: an ACL user needs its keys (~redlock:*) as well as the locks'.
const KeyPrefix = "redlock:"

// MarkerKey is the restart marker every node keeps, without a TTL, while the
// restart quarantine is on. It holds the node's TIME in microseconds when the
// first acquisition found it missing, or "0" once MarkReady declared the node
// ready. A node is recovering, and withholds its vote, while its clock is less
// than Options.RecoveryDelay past the marker's time; a node without the marker
// lost its data (or never served a lock) and starts recovering at the next
// acquisition. The key is the same for every Options.KeyPrefix.
const MarkerKey = "redlock:marker"

// ProcessKey holds, beside MarkerKey, the run_id of the Redis process that
// wrote the marker. A node whose process is another one (it restarted and
// reloaded a snapshot or an AOF, or a replica took over) has not kept every
// lock it granted, whatever its data set says, and starts a new quarantine.
// The key is the same for every Options.KeyPrefix.
const ProcessKey = "redlock:process"

// FencePrefix starts every fencing counter key; lock keys must not.
const FencePrefix = "redlock:fence:"

// FenceKey returns the name of the fencing counter kept on every node beside
// the lock key key (the key on the wire, Options.KeyPrefix included):
// "redlock:fence:" + key. It holds the last fencing token the node handed out
// for key, as a decimal integer, and expires the lock's TTL plus
// Options.RecoveryDelay after the last acquisition (see
// wireArgs.counterMillis). Lock keys must not begin with "redlock:fence:".
func FenceKey(key string) string { return FencePrefix + key }

// ReleaseChannelPrefix followed by a lock key names the pub/sub channel on
// which releases of the key are announced; on a Redis Cluster, the slot tag
// of the key comes between them (see Layout.ReleaseChannel). The release
// script appends the key, so that a release does not build the name.
const ReleaseChannelPrefix = "redlock:released:"

// ReaderEntry returns the entry in a key's queue of a reader of client id
// that waits for the key (lua/reader_entries.lua): id, "+r" (no client id
// has a "+") and n, which numbers the client's waiting readers.
func ReaderEntry(id string, n uint64) string { return id + "+r" + strconv.FormatUint(n, 10) }

// EntryClient returns the id of the client of a queue entry: the entry
// itself, or a reader's (ReaderEntry) up to its "+r".
func EntryClient(entry string) string {
	id, _, _ := strings.Cut(entry, "+")
	return id
}

// QueuePrefix and QueueDeadlinePrefix start the names of the two keys that
// queue the clients waiting for a lock key (see QueueKeys).
const (
	QueuePrefix         = "redlock:queue:"
	QueueDeadlinePrefix = "redlock:queue-until:"
)

// WaitingPrefix starts the name of a key's waiting mark, "redlock:waiting:"
// + key: a string that says a client may wait for the key on this node. Every
// client that waits sets it (a refused acquisition as it queues, a refused
// reader, an election's observer), for QueueLasts and a second more, and a
// release or a newcomer that finds it absent reads no queue and announces
// nothing (see lua/waiting.lua).
const WaitingPrefix = "redlock:waiting:"

// QueueKeys returns the names of the keys that queue the clients waiting for
// the lock key key: "redlock:queue:" + key, a sorted set of client ids by the
// time each began waiting, and "redlock:queue-until:" + key, a hash of each
// client id to the time (on that client's clock, in microseconds) past which
// its entry is stale. A client enters the queue when its attempt is refused,
// and leaves it on every node with its release of the lock it won, which
// wakes the first two clients in line (see the wait package). Both keys expire
// QueueLasts after the last refusal, so nothing stays behind a key nobody
// waits for. The two names
// share one allocation.
func QueueKeys(key string) (queue, deadlines string) {
	s := QueuePrefix + key + QueueDeadlinePrefix + key
	return s[:len(QueuePrefix)+len(key)], s[len(QueuePrefix)+len(key):]
}

// QueueLasts is how long a client's place in a key's queue lasts without
// being renewed by another refused attempt: well above the retry delays of
// a client that waits, so that it keeps its place, and short enough that a
// client that stopped waiting without taking the key is not woken in vain
// for long.
const QueueLasts = 2 * time.Second

// ForcedPrefix starts the name of the record that a lock forced free by an
// operator leaves (see Layout.ForcedKey); lock keys must not begin with it.
const ForcedPrefix = "redlock:forced:"

// Layout names the keys the library keeps beside a lock key on the nodes
// (see above). Over independent servers they are fixed names, and the
// key's name with a prefix. When a node is a Redis Cluster, a script may
// only touch keys of one hash slot, so every key kept for a lock key goes
// in the lock key's slot: its name carries, in braces, a tag of that slot
// (slotTag), and the restart marker and its process key exist once per
// slot ("redlock:marker:{tag}"), since a slot is what moves between a
// cluster's masters, by resharding or by a replica's promotion. The slot's
// new master is another process than the one that wrote the marker, so
// the quarantine holds the slot out for the recovery delay there, whether
// or not the master's last writes reached it (see quarantine.lua).
type Layout struct {
	Cluster bool
}

// Tag returns "{t}" for a tag t of key's slot, or "" over independent
// servers.
func (l Layout) Tag(key string) string {
	if !l.Cluster {
		return ""
	}
	return "{" + hashslot.Tag(hashslot.Of(key)) + "}"
}

// FenceKey returns the name of key's fencing counter.
func (l Layout) FenceKey(key string) string {
	return FencePrefix + l.Tag(key) + key
}

// WaitingKey returns the name of key's waiting mark (see WaitingPrefix).
func (l Layout) WaitingKey(key string) string {
	return WaitingPrefix + l.Tag(key) + key
}

// ForcedKey returns the name of the record that Client.ForceRelease leaves
// on a node where it took key from its holder: "redlock:forced:" + tag +
// key, holding who forced it, when (the caller's clock in microseconds)
// and the tokens taken, separated by spaces. It expires when the lock
// would have, so that a holder that renews learns, at its next
// extension, that an operator took the lock over, and nothing stays
// longer than the lock did.
func (l Layout) ForcedKey(key string) string {
	return ForcedPrefix + l.Tag(key) + key
}

// MarkerKeys returns the names of the restart marker and its process key
// that guard key.
func (l Layout) MarkerKeys(key string) (marker, process string) {
	if !l.Cluster {
		return MarkerKey, ProcessKey
	}
	return SlotMarkerKeys(hashslot.Of(key))
}

// SlotMarkerKeys returns the names of the restart marker and its process
// key of a Redis Cluster's slot.
func SlotMarkerKeys(slot int) (marker, process string) {
	tag := "{" + hashslot.Tag(slot) + "}"
	return MarkerKey + ":" + tag, ProcessKey + ":" + tag
}

// ServerKeys returns keys as a node that is not a Redis Cluster names
// them, in a request built for a node list that has one (Layout.Cluster):
// a slot's restart marker and process key are the server's one marker
// and process key there, as all of a server's slots restart together,
// and its marker is the one 'redlock init' of that server alone wrote.
// It returns keys itself when none is a slot's.
func ServerKeys(keys []string) []string {
	var out []string
	for i, k := range keys {
		server := ""
		switch {
		case strings.HasPrefix(k, MarkerKey+":{"):
			server = MarkerKey
		case strings.HasPrefix(k, ProcessKey+":{"):
			server = ProcessKey
		default:
			continue
		}
		if out == nil {
			out = slices.Clone(keys)
		}
		out[i] = server
	}
	if out == nil {
		return keys
	}
	return out
}

// ReleaseChannel returns the name of the pub/sub channel on which releases
// of key are announced: "redlock:released:" + key over independent servers,
// and "redlock:released:{tag}" + key when a node is a Redis Cluster, so that
// the channel is a shard channel of the key's slot. A cluster node
// announces with SPUBLISH on it, which reaches the subscribers of the
// slot's shard only, where PUBLISH would reach every node of the cluster
// (see lua/sharded_release.lua); a Redis Cluster also refuses a script's
// SPUBLISH on a channel that another master serves.
func (l Layout) ReleaseChannel(key string) string {
	return ReleaseChannelPrefix + l.Tag(key) + key
}

// TokenBytes is the size of the random part of a lock token: 160 bits from the
// CSPRNG, as the Redlock description recommends, so that two acquisitions never
// share a token.
const TokenBytes = 20

// TokenTTLSeparator separates the fields of a token this library writes:
// "<random>.<granted>.<owner>.<ttl>", where random is TokenBytes from the
// CSPRNG in URL-safe base64 without padding, granted is the holder's clock
// when it began the attempt, in microseconds, owner is the holder's identity
// (see CheckOwner) and ttl is the TTL the lock was acquired with, in
// milliseconds, so that ExtendToken can renew a lock for as long as it was
// taken without being told (see ParseToken); a lock taken with a
// lock-delay has "<ttl>+<delay>" there, the delay in milliseconds too, so
// that ExtendToken keeps it. The TTL comes last, so that a
// reader of an older token ("<random>.<ttl>") still finds it; the owner may
// hold the separator, since the fields around it are read from both ends.
// The separator is outside URL-safe base64, and no space, which separates
// the token from the names in a release announcement. The token stays a
// plain string: other Redlock libraries compare it as one.
const TokenTTLSeparator = '.'

// MaxOwnerBytes bounds an owner's length, which every node stores in each
// token: the longest host name (253 bytes) with a process id fits.
const MaxOwnerBytes = 255

// CheckOwner returns "" when owner can go in a token, else what is wrong
// with it: it must be 1 to MaxOwnerBytes bytes of printable ASCII other
// than the space ('!' to '~'), so that the token stays one word of a
// release announcement and prints as it is.
func CheckOwner(owner string) string {
	if owner == "" {
		return "empty"
	}
	if len(owner) > MaxOwnerBytes {
		return "longer than " + strconv.Itoa(MaxOwnerBytes) + " bytes"
	}
	for i := 0; i < len(owner); i++ {
		if b := owner[i]; b <= ' ' || b > '~' {
			return "byte " + strconv.Itoa(i) + " is " + byteAt(owner, i) + ": only printable ASCII without spaces ('!' to '~') is allowed"
		}
	}
	return ""
}

// byteAt describes the byte of s at i for an error: quoted when ASCII, else
// as the start of the character it begins, or in hex.
func byteAt(s string, i int) string {
	if s[i] < utf8.RuneSelf {
		return strconv.QuoteRune(rune(s[i]))
	}
	if r, _ := utf8.DecodeRuneInString(s[i:]); r != utf8.RuneError {
		return "the first of " + strconv.QuoteRune(r) + ", not ASCII"
	}
	return "0x" + strconv.FormatUint(uint64(s[i]), 16) + ", not ASCII"
}

// SanitizeOwner returns owner made acceptable to CheckOwner: each byte
// outside '!' to '~' replaced by '_', cut to MaxOwnerBytes, "unknown" when
// empty. It makes a default owner from a host name.
func SanitizeOwner(owner string) string {
	b := []byte(owner)
	for i, c := range b {
		if c <= ' ' || c > '~' {
			b[i] = '_'
		}
	}
	if len(b) > MaxOwnerBytes {
		b = b[:MaxOwnerBytes]
	}
	if len(b) == 0 {
		return "unknown"
	}
	return string(b)
}

// TokenInfo is what a token of this library says about its grant.
type TokenInfo struct {
	// TTL is the TTL the lock was acquired with; 0 when the token does not
	// say.
	TTL time.Duration
	// Owner is the holder's identity, "" when the token does not say.
	Owner string
	// Granted is the holder's clock when it began the attempt that won;
	// zero when the token does not say.
	Granted time.Time
	// Delay is the lock-delay the lock was acquired with; 0 when none, or
	// the token does not say.
	Delay time.Duration
}

// randomChars is the length of a token's random part.
var randomChars = base64.RawURLEncoding.EncodedLen(TokenBytes)

// ParseToken returns what token, written by this library, says of its
// grant, and false for a token that says nothing (another library's). A
// token from before owners ("<random>.<ttl>") gives its TTL only.
func ParseToken(token string) (TokenInfo, bool) {
	var info TokenInfo
	i := strings.LastIndexByte(token, TokenTTLSeparator)
	if i < 0 {
		return info, false
	}
	ttl, delay, delayed := strings.Cut(token[i+1:], "+")
	var ok bool
	if info.TTL, ok = parseMillis(ttl); !ok {
		return TokenInfo{}, false
	}
	if delayed {
		if info.Delay, ok = parseMillis(delay); !ok {
			return TokenInfo{}, false
		}
	}
	rest := token[:i]
	if len(rest) <= randomChars || rest[randomChars] != TokenTTLSeparator {
		return info, true
	}
	granted, owner, ok := strings.Cut(rest[randomChars+1:], string(TokenTTLSeparator))
	us, err := strconv.ParseInt(granted, 10, 64)
	if !ok || err != nil || us <= 0 || CheckOwner(owner) != "" {
		return info, true
	}
	info.Owner, info.Granted = owner, time.UnixMicro(us)
	return info, true
}

// parseMillis returns the duration of s, a count of milliseconds in
// decimal, and false unless it is positive and fits a time.Duration.
func parseMillis(s string) (time.Duration, bool) {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms <= 0 || ms > math.MaxInt64/int64(time.Millisecond) {
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}

// AttemptStrings returns what an acquisition attempt on key by owner sends
// that changes with every attempt: a fresh token (see TokenTTLSeparator),
// granted now to owner for ttl with a lock-delay of delay, the key's fencing counter key (fenceKey)
// and now in microseconds, in decimal. tag is the key's slot tag (see
// Layout). With queued, it also returns the names of the key's queue keys
// (see QueueKeys) and of its waiting mark (see WaitingPrefix). They share one
// allocation. owner must pass CheckOwner.
func AttemptStrings(key string, now time.Time, ttl, delay time.Duration, owner, tag string, queued bool) (token, fenceKey, clock, queue, deadlines, waiting string) {
	var b [TokenBytes]byte
	rand.Read(b[:]) // never returns an error (crypto/rand, Go 1.24+)
	var stack [256]byte
	buf := base64.RawURLEncoding.AppendEncode(stack[:0], b[:])
	us := now.UnixMicro()
	buf = strconv.AppendInt(append(buf, TokenTTLSeparator), us, 10)
	buf = append(append(append(buf, TokenTTLSeparator), owner...), TokenTTLSeparator)
	buf = strconv.AppendInt(buf, ttl.Milliseconds(), 10)
	if ms := delay.Milliseconds(); ms > 0 {
		buf = strconv.AppendInt(append(buf, '+'), ms, 10)
	}
	end := [6]int{len(buf)}
	buf = append(append(append(buf, FencePrefix...), tag...), key...)
	end[1] = len(buf)
	buf = strconv.AppendInt(buf, us, 10)
	end[2], end[3], end[4], end[5] = len(buf), len(buf), len(buf), len(buf)
	if queued {
		buf = append(append(append(buf, QueuePrefix...), tag...), key...)
		end[3] = len(buf)
		buf = append(append(append(buf, QueueDeadlinePrefix...), tag...), key...)
		end[4] = len(buf)
		buf = append(append(append(buf, WaitingPrefix...), tag...), key...)
		end[5] = len(buf)
	}
	s := string(buf)
	return s[:end[0]], s[end[0]:end[1]], s[end[1]:end[2]], s[end[2]:end[3]], s[end[3]:end[4]], s[end[4]:end[5]]
}

// ReleaseStrings returns what an announced release of key sends that
// changes with every call: the prefix of the key's release channel (the
// script appends the key), now in microseconds, in decimal, and the names of
// the key's queue keys (see QueueKeys; tag is the key's slot tag, and goes
// in the channel's name too) and of its waiting mark (see WaitingPrefix). They share one allocation, as in
// AttemptStrings; without a tag, the prefix is ReleaseChannelPrefix.
func ReleaseStrings(key string, now time.Time, tag string) (channel, clock, queue, deadlines, waiting string) {
	var stack [192]byte
	buf := stack[:0]
	if tag != "" {
		buf = append(append(buf, ReleaseChannelPrefix...), tag...)
	}
	endChannel := len(buf)
	buf = strconv.AppendInt(buf, now.UnixMicro(), 10)
	endClock := len(buf)
	buf = append(append(append(buf, QueuePrefix...), tag...), key...)
	endQueue := len(buf)
	buf = append(append(append(buf, QueueDeadlinePrefix...), tag...), key...)
	endDeadlines := len(buf)
	buf = append(append(append(buf, WaitingPrefix...), tag...), key...)
	s := string(buf)
	channel = ReleaseChannelPrefix
	if tag != "" {
		channel = s[:endChannel]
	}
	return channel, s[endChannel:endClock], s[endClock:endQueue], s[endQueue:endDeadlines], s[endDeadlines:]
}

// SlotCount is the number of hash slots of a Redis Cluster.
const SlotCount = hashslot.Count

// Reserved reports whether key is, or begins like, one of the keys the
// library keeps beside the locks, which no lock key may be.
func Reserved(key string) bool {
	for _, prefix := range []string{MarkerKey, ProcessKey, FencePrefix, QueuePrefix, QueueDeadlinePrefix, WaitingPrefix, ForcedPrefix} {
		if strings.HasPrefix(key, prefix) {
			return true
		}
	}
	return false
}

// MarkerSets returns the keys of every restart marker, the marker's and
// its process key's: one marker on independent servers, and one per hash
// slot on a Redis Cluster.
func (l Layout) MarkerSets() [][]string {
	if !l.Cluster {
		return [][]string{{MarkerKey, ProcessKey}}
	}
	sets := make([][]string, SlotCount)
	for slot := range sets {
		marker, process := SlotMarkerKeys(slot)
		sets[slot] = []string{marker, process}
	}
	return sets
}

// PermitInfix joins a semaphore's name and a permit's number in the
// permit's key.
const PermitInfix = ":permit:"

// PermitKey returns the key of permit i (from 1) of the semaphore whose key
// is key: key, PermitInfix and i. A permit is a mutex of its own.
func PermitKey(key string, i int) string {
	return key + PermitInfix + strconv.Itoa(i)
}

// PermitNumber returns the number of the permit that name (a permit's key,
// or a channel named for one) ends with, and whether it ends with one.
func PermitNumber(name string) (int, bool) {
	i := strings.LastIndex(name, PermitInfix)
	if i < 0 {
		return 0, false
	}
	n, err := strconv.Atoi(name[i+len(PermitInfix):])
	return n, err == nil && n >= 1
}

// ScanPattern returns the MATCH pattern of a SCAN for the keys that begin
// with prefix: prefix with Redis's glob characters escaped, then "*". It
// goes byte by byte, as Redis matches, so that a prefix that is not valid
// UTF-8 stays as it is.
func ScanPattern(prefix string) string {
	var b strings.Builder
	for i := 0; i < len(prefix); i++ {
		if strings.IndexByte(`*?[]\`, prefix[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(prefix[i])
	}
	b.WriteByte('*')
	return b.String()
}
