package delayproxy

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// serve runs the proxies described by spec, JSON of a Spec, until stdin
// closes.
func serve(specJSON string) error {
	var spec Spec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return fmt.Errorf("bad spec %q: %w", specJSON, err)
	}
	streams := []string{"downstream"}
	if spec.BothWays {
		streams = append(streams, "upstream")
	}
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	listen := make([]string, len(spec.Upstreams))
	for i, upstream := range spec.Upstreams {
		proxy := toxiproxy.NewProxy(server, "node"+strconv.Itoa(i), "127.0.0.1:0", upstream)
		if err := proxy.Start(); err != nil {
			return err
		}
		defer proxy.Stop()
		for _, stream := range streams {
			toxic := fmt.Sprintf(`{"type":%q,"stream":%q,"attributes":{"micros":%d}}`,
				delayToxicType, stream, (spec.Delay - spec.Overhead).Microseconds())
			if _, err := proxy.Toxics.AddToxicJson(strings.NewReader(toxic)); err != nil {
				return err
			}
		}
		listen[i] = proxy.Listen
	}
	fmt.Printf("ready %s\n", strings.Join(listen, " "))
	io.Copy(io.Discard, os.Stdin)
	return nil
}
