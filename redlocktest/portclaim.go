package redlocktest

import (
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// A node keeps its port while it is down (Kill, Stop, Pause), to come back
// on it; meanwhile the port is free, and a node of another cluster, in this
// process or in another test process running at the same time, could take
// it. So every port freePort picks is claimed: a file of claimDir, locked
// (flock) for as long as this process keeps the claim. freePort skips a
// port claimed by anyone; a claim ends with the node's Cluster or Sentinel
// (releasePorts), or with the process, whose locks the kernel drops.

// claimDir holds the claim files, shared by every process of the machine.
var claimDir = filepath.Join(os.TempDir(), "redlocktest-ports")

// claims are the ports this process claimed, and their locked files.
var claims = struct {
	sync.Mutex
	files map[int]*os.File
}{files: map[int]*os.File{}}

// claimPort claims port, and reports whether it did: false when this
// process or another holds it. Where claims cannot be made (no claimDir,
// no file locks), it claims within this process only.
func claimPort(port int) bool {
	claims.Lock()
	defer claims.Unlock()
	if _, ok := claims.files[port]; ok {
		return false
	}
	f, err := lockedClaim(port)
	if err == errClaimed {
		return false
	}
	claims.files[port] = f // nil when the claim could not be made: this process's only
	return true
}

// lockedClaim opens and locks port's claim file; errClaimed when another
// process holds it, nil and another error when no claim can be made.
func lockedClaim(port int) (*os.File, error) {
	if err := os.MkdirAll(claimDir, 0o777); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(claimDir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, err
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// releasePorts ends this process's claims of ports; 0 is skipped.
func releasePorts(ports ...int) {
	claims.Lock()
	defer claims.Unlock()
	for _, port := range ports {
		f, ok := claims.files[port]
		if !ok {
			continue
		}
		delete(claims.files, port)
		if f != nil {
			f.Close() // drops the lock; the file stays, for the next claim
		}
	}
}
