package wire

import (
	"regexp"
	"slices"
)

// calledCommand matches a command that a script runs by redis.call, which
// fails the whole script when the node refuses it (redis.pcall's refusals
// are the script's to handle).
var calledCommand = regexp.MustCompile(`redis\.call\("([A-Z_]+)"`)

// listOnly are the commands that only List's scan runs.
var listOnly = []string{"GETRANGE", "SCAN"}

// LockCommands returns the commands that the scripts taking, extending and
// releasing locks run by redis.call, each once, sorted: a node that refuses
// one of them to the user fails those scripts, some only at a release,
// which would leave a lock granted and never released. They are read from
// the scripts themselves.
func LockCommands() []string {
	var cmds []string
	for _, m := range calledCommand.FindAllStringSubmatch(Library, -1) {
		if cmd := m[1]; !slices.Contains(cmds, cmd) && !slices.Contains(listOnly, cmd) {
			cmds = append(cmds, cmd)
		}
	}
	slices.Sort(cmds)
	return cmds
}
