package redlock

import (
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"strconv"
	"strings"
)

// script is a Lua script with its SHA1, sent by EVALSHA.
type script struct {
	source string
	sha1   string
	// batchID names the script inside the batch script.
	batchID string
}

func newScript(source string) *script {
	sum := sha1.Sum([]byte(source))
	return &script{source: source, sha1: hex.EncodeToString(sum[:])}
}

var (
	//go:embed lua/acquire.lua
	acquireSource string
	//go:embed lua/release.lua
	releaseSource string
	//go:embed lua/extend.lua
	extendSource string
	//go:embed lua/raise.lua
	raiseSource string
	//go:embed lua/inspect.lua
	inspectSource string
	//go:embed lua/mark_ready.lua
	markReadySource string
	//go:embed lua/batch.lua
	batchSource string

	acquireScript   = newScript(acquireSource)
	releaseScript   = newScript(releaseSource)
	extendScript    = newScript(extendSource)
	raiseScript     = newScript(raiseSource)
	inspectScript   = newScript(inspectSource)
	markReadyScript = newScript(markReadySource)

	// batchScript runs the requests of several calls to one node in one
	// script call; see pipe.
	batchScript = newBatchScript(acquireScript, releaseScript, extendScript, raiseScript, inspectScript, markReadyScript)
)

// sharedLine declares, in a script, the table that the requests of one
// script call share; the batch script makes it one table for all of them.
const sharedLine = "local shared = {}"

// newBatchScript returns lua/batch.lua with each of scripts as a function
// of its own KEYS and ARGV, and numbers them.
func newBatchScript(scripts ...*script) *script {
	var b strings.Builder
	b.WriteString("local batchShared = {}\n")
	b.WriteString("local scripts = {\n")
	for i, s := range scripts {
		s.batchID = strconv.Itoa(i + 1)
		b.WriteString("function(KEYS, ARGV)\n")
		b.WriteString(strings.Replace(s.source, sharedLine, "local shared = batchShared", 1))
		b.WriteString("\nend,\n")
	}
	b.WriteString("}\n")
	b.WriteString(batchSource)
	return newScript(b.String())
}
