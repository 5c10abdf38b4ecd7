package stack

import (
	"context"
	"fmt"
	"strings"

	"github.com/seckill-lab/seckill/internal/server"
)

// Leader names the member of the quorum group (the components named
// prefix-K of a kind its description marks Member) that is its leader now.
func Leader(ctx context.Context, st *State, prefix string) (string, error) {
	var asked []string
	for _, c := range st.Components {
		if _, ks, ok := server.KindOf(c.Kind); !ok || !ks.Member || !strings.HasPrefix(c.Name, prefix+"-") {
			continue
		}
		asked = append(asked, c.Name)
		if role, err := componentRole(ctx, c); err == nil && role == "leader" {
			return c.Name, nil
		}
	}
	if len(asked) == 0 {
		return "", fmt.Errorf("no %s members in the stack in %s (the ha topology has them: seckill up --topology ha)", prefix, st.Dir)
	}
	return "", fmt.Errorf("no leader among %s", strings.Join(asked, ", "))
}
