package redlocktest

import (
	"slices"
	"testing"
)

func TestAddSlotsArgs(t *testing.T) {
	t.Parallel()
	r := SlotRange{First: 100, Last: 199}
	for _, tc := range []struct {
		own  []SlotRange
		want []string
	}{
		{nil, []string{"100", "199"}},
		{[]SlotRange{{0, 50}, {300, 400}}, []string{"100", "199"}},
		{[]SlotRange{{100, 100}}, []string{"101", "199"}},
		{[]SlotRange{{120, 130}, {150, 150}}, []string{"100", "119", "131", "149", "151", "199"}},
		{[]SlotRange{{50, 120}, {199, 250}}, []string{"121", "198"}},
		{[]SlotRange{{0, 16383}}, nil},
	} {
		got := addSlotsArgs(r, tc.own, true)
		if want := append([]string{"CLUSTER", "ADDSLOTSRANGE"}, tc.want...); !slices.Equal(got, want) {
			t.Errorf("addSlotsArgs(%v, %v) = %q, want %q", r, tc.own, got, want)
		}
	}
}

func TestSplitSlotsAndParseClusterNodes(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 3, 7, SlotCount} {
		ranges := splitSlots(n)
		next := 0
		for _, r := range ranges {
			if r.First != next || r.Last < r.First {
				t.Fatalf("splitSlots(%d) = ... %v ..., want it to start at %d", n, r, next)
			}
			next = r.Last + 1
		}
		if next != SlotCount {
			t.Fatalf("splitSlots(%d) ends at %d", n, next-1)
		}
	}
	const reply = "id1 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460 7 [8->-id2]\n" +
		"id2 127.0.0.1:7001@17001,host master,fail? - 0 0 2 connected\n"
	view, err := parseClusterNodes(reply)
	if err != nil {
		t.Fatal(err)
	}
	if len(view) != 2 || view[0].addr != "127.0.0.1:7000" || !slices.Equal(view[0].slots, []SlotRange{{0, 5460}, {7, 7}}) ||
		view[1].addr != "127.0.0.1:7001" || !slices.Equal(view[1].flags, []string{"master", "fail?"}) || view[1].slots != nil {
		t.Fatalf("parseClusterNodes = %+v", view)
	}
	for _, bad := range []string{"id 1.2.3.4:5 master\n", "id a:1@2 master - 0 0 1 connected 5-4\n", "id a:1@2 master - 0 0 1 connected 16384\n"} {
		if _, err := parseClusterNodes(bad); err == nil {
			t.Errorf("parseClusterNodes(%q) succeeded", bad)
		}
	}
}
