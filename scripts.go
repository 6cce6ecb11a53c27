package redlock

import (
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"regexp"
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

// inputIndex matches a script's reads of its inputs. Scripts read them only
// as KEYS[n] and ARGV[n] with a literal n, so that the batch script can run
// each request on its slice of the batch's own KEYS and ARGV without
// copying them into tables of its own.
var (
	inputIndex = regexp.MustCompile(`\b(KEYS|ARGV)\[(\d+)\]`)
	inputName  = regexp.MustCompile(`\b(KEYS|ARGV)\b`)
)

// newBatchScript returns lua/batch.lua with each of scripts as a function
// of the batch's KEYS and ARGV and of the offsets of its request's keys and
// arguments in them, and numbers the scripts. It panics when a script reads
// KEYS or ARGV other than by a literal index.
func newBatchScript(scripts ...*script) *script {
	var b strings.Builder
	b.WriteString("local batchShared = {}\n")
	b.WriteString("local scripts = {\n")
	for i, s := range scripts {
		s.batchID = strconv.Itoa(i + 1)
		body := strings.Replace(s.source, sharedLine, "local shared = batchShared", 1)
		body = inputIndex.ReplaceAllStringFunc(body, func(m string) string {
			sub := inputIndex.FindStringSubmatch(m)
			if sub[1] == "KEYS" {
				return "KEYS[k+" + sub[2] + "]"
			}
			return "ARGV[a+" + sub[2] + "]"
		})
		if len(inputName.FindAllStringIndex(s.source, -1)) != len(inputIndex.FindAllStringIndex(s.source, -1)) {
			panic("redlock: a script reads KEYS or ARGV other than by a literal index")
		}
		b.WriteString("function(KEYS, ARGV, k, a)\n")
		b.WriteString(body)
		b.WriteString("\nend,\n")
	}
	b.WriteString("}\n")
	b.WriteString(batchSource)
	return newScript(b.String())
}
