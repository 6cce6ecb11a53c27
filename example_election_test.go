package redlock_test

import (
	"context"
	"fmt"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/goredis"
)

// Two candidates campaign for one service's lead: the first is elected,
// the second takes over at once when the first resigns, with a greater
// term; an observer sees each change.
func ExampleElection() {
	ctx := context.Background()
	var elections []*redlock.Election
	for range 3 {
		client, err := goredis.Dial(ctx, exampleNodes, nil)
		if err != nil {
			fmt.Println(err)
			return
		}
		defer client.Close()
		e, err := client.NewElection("scheduler")
		if err != nil {
			fmt.Println(err)
			return
		}
		elections = append(elections, e)
	}
	a, b, watcher := elections[0], elections[1], elections[2]

	observing, stop := context.WithCancel(ctx)
	defer stop()
	changes := watcher.Observe(observing)
	fmt.Println("vacant:", (<-changes).Vacant())

	if err := a.Campaign(ctx, "host-a:8080"); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("a leads:", (<-changes).Term == a.Term())

	elected := make(chan error)
	go func() { elected <- b.Campaign(ctx, "host-b:8080") }()
	// ... a works as the leader until it stops, or until a.Done() closes
	// (it lost the lead and must stop at once) ...
	a.Resign(ctx) // b is elected at once, not after a TTL
	if err := <-elected; err != nil {
		fmt.Println(err)
		return
	}
	for l := range changes {
		if !l.Vacant() {
			fmt.Println("b leads:", l.Term == b.Term(), "with a greater term:", b.Term() > a.Term())
			break
		}
	}
	leader, err := b.Leader(ctx)
	fmt.Println(leader.Value, err)
	b.Resign(ctx)
	// Output:
	// vacant: true
	// a leads: true
	// b leads: true with a greater term: true
	// host-b:8080 <nil>
}
