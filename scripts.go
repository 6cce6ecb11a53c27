package redlock

import (
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
)

// script is a Lua script with its SHA1, sent by EVALSHA.
type script struct {
	source string
	sha1   string
}

func newScript(source string) script {
	sum := sha1.Sum([]byte(source))
	return script{source: source, sha1: hex.EncodeToString(sum[:])}
}

var (
	//go:embed lua/release.lua
	releaseSource string
	//go:embed lua/extend.lua
	extendSource string

	releaseScript = newScript(releaseSource)
	extendScript  = newScript(extendSource)
)
