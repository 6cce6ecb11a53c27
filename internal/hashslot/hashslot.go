// Package hashslot computes Redis Cluster hash slots, and short strings that
// hash to each slot. The library, its test harness and the redlock
// command's doctor share it: they must agree on every slot's tag, which
// names the keys the library keeps per slot.
package hashslot

import (
	"strconv"
	"strings"
	"sync"
)

// Count is the number of hash slots of a Redis Cluster.
const Count = 16384

// Of returns the Redis Cluster hash slot of key: CRC16 (XMODEM) of the key,
// or of its hash tag (the part between the first "{" and the first "}"
// after it, when not empty), modulo Count.
func Of(key string) int {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			key = key[open+1 : open+1+end]
		}
	}
	return int(crc16(key)) % Count
}

// crc16 is CRC-16/XMODEM, the checksum Redis Cluster hashes keys with.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

var (
	tagsOnce sync.Once
	tags     []string // slot → a short string whose hash slot it is
)

// Tag returns a short string that hashes to slot: in braces, it puts a key
// in that slot whatever follows. The table is built on first use by hashing
// decimal numbers until every slot has one (about 170,000 of them, a few
// milliseconds). The smallest such number is taken, so that every user of
// this package names a slot's keys alike.
func Tag(slot int) string {
	tagsOnce.Do(func() {
		tags = make([]string, Count)
		for n, found := 0, 0; found < Count; n++ {
			s := strconv.Itoa(n)
			if i := int(crc16(s)) % Count; tags[i] == "" {
				tags[i] = s
				found++
			}
		}
	})
	return tags[slot]
}
