package nodes

import "testing"

func TestParseCommandStats(t *testing.T) {
	body := "# Commandstats\r\ncmdstat_get:calls=4,usec=12,usec_per_call=3.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_evalsha:calls=2,usec=40,usec_per_call=20.00\r\ncmdstat_client|list:calls=1,usec=3\r\n"
	got := parseCommandStats(body)
	want := map[string]int64{"get": 4, "evalsha": 2, "client|list": 1, "usec:get": 12, "usec:evalsha": 40, "usec:client|list": 3}
	if len(got) != len(want) {
		t.Fatalf("parseCommandStats = %v, want %v", got, want)
	}
	for name, n := range want {
		if got[name] != n {
			t.Errorf("%s: %d calls, want %d", name, got[name], n)
		}
	}
}
