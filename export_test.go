package redlock

// BatchScriptSource is the batch script as sent, for tests that preload the
// library's scripts on their nodes.
var BatchScriptSource = batchScript.source
