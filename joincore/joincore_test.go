package joincore

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/engine"
)

// TestCheckKeys: the two inputs' keys must pair up in number and type; nullability may differ.
func TestCheckKeys(t *testing.T) {
	for right, want := range map[string]string{
		`"fields":[{"name":"a","type":"INT","nullable":false},{"name":"b","type":"VARCHAR"}],"keys":[0,1]`: "",
		`"fields":[{"name":"a","type":"INT"}],"keys":[0]`:                                                  "spec: inputs[1].keys: 1 keys, the left input has 2",
		`"fields":[{"name":"a","type":"INT"},{"name":"b","type":"BIGINT"}],"keys":[0,1]`:                   "spec: inputs[1].keys[1]: type BIGINT NOT NULL differs from the left key's VARCHAR NOT NULL",
	} {
		spec, err := engine.ParseSpec([]byte(`{"kind":"join","max_parallelism":8,"inputs":[{"fields":[{"name":"a","type":"INT"},{"name":"b","type":"VARCHAR"}],"keys":[0,1]},{` + right + `}]}`))
		if err != nil {
			t.Fatal(err)
		}
		err = CheckKeys(spec)
		if got := fmt.Sprint(err); want == "" && err != nil || want != "" && !strings.Contains(got, want) {
			t.Errorf("right input %s: %v, want %q", right, err, want)
		}
	}
}
