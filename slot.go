package redlock

import (
	"strconv"
	"strings"
	"sync"
)

// slotCount is the number of hash slots of a Redis Cluster.
const slotCount = 16384

// keySlot returns the Redis Cluster hash slot of key: CRC16 (XMODEM) of the
// key, or of its hash tag (the part between the first "{" and the first "}"
// after it, when not empty), modulo 16384.
func keySlot(key string) int {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			key = key[open+1 : open+1+end]
		}
	}
	return int(crc16(key)) % slotCount
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
	slotTagsOnce sync.Once
	slotTags     []string // slot → a short string whose hash slot it is
)

// slotTag returns a short string that hashes to slot: in braces, it puts a
// key in that slot whatever follows. The table is built on first use by
// hashing decimal numbers until every slot has one (about 170,000 of them,
// a few milliseconds), and only by clients with a Redis Cluster node.
func slotTag(slot int) string {
	slotTagsOnce.Do(func() {
		slotTags = make([]string, slotCount)
		for n, found := 0, 0; found < slotCount; n++ {
			s := strconv.Itoa(n)
			if i := int(crc16(s)) % slotCount; slotTags[i] == "" {
				slotTags[i] = s
				found++
			}
		}
	})
	return slotTags[slot]
}
