package wire

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"
)

// The scripts also make one Redis 7 function library (FUNCTION LOAD),
// built from the same files of lua/: each function of lua/ is defined once,
// when the library loads, and each script is a function of the library,
// which runs the script's call (see Script.call) on FCALL's keys and
// arguments. A library keeps its locals between calls for as long as the
// server process keeps it loaded, so that what holds for the whole process
// is read once (see lua/process.lua), where a script defines its functions
// and reads it again on every call.
//
// The library is named after a digest of its code, and so are its
// functions: clients of different versions load libraries of different
// names on one server, and each calls its own.

// LibraryPrefix starts the names of the library and of its functions.
const LibraryPrefix = "redlock_"

// Library is the source of the function library, for FUNCTION LOAD, and
// LibraryName its name.
var Library, LibraryName = newLibrary(Scripts)

// newLibrary returns the source and name of the library of scripts, and
// names each script's function in it (Script.Function).
func newLibrary(scripts []*Script) (source, name string) {
	fns := make([]*luaFunction, 0, len(scripts)+1)
	for _, s := range scripts {
		if s.fn != nil {
			fns = append(fns, s.fn)
		}
	}
	body := definitions(append(fns, batchFunc)...)
	var calls strings.Builder
	for _, s := range scripts {
		calls.WriteString(s.Name() + s.suffix + " " + s.call + " " + s.flags() + "\n")
	}
	sum := sha1.Sum([]byte(body + calls.String()))
	name = LibraryPrefix + hex.EncodeToString(sum[:6])
	var b strings.Builder
	b.WriteString("#!lua name=" + name + "\n")
	b.WriteString(body)
	for _, s := range scripts {
		s.Function = name + "_" + s.Name() + s.suffix
		b.WriteString("redis.register_function{function_name='" + s.Function + "', callback=function(KEYS, ARGV) return " +
			s.call + " end, flags={" + s.flags() + "}}\n")
	}
	return b.String(), name
}

// flags returns the flags of s's function, as a Lua list's items.
func (s *Script) flags() string {
	if s.ReadOnly {
		return "'no-writes'"
	}
	if s.AllowOOM {
		return "'allow-oom'"
	}
	return ""
}
