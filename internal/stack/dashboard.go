package stack

// The live dashboard (`seckill dashboard`), run as the stack's component
// "dashboard" on 127.0.0.1:B+88 when Options.Dashboard is set (`seckill up`
// sets it). It reads the instances and the admin token from the run
// directory; internal/dashboard holds its logic.

import (
	"context"
	"fmt"
	"io"
	"net/http"
)

// DashboardName is the dashboard's component name.
const DashboardName = "dashboard"

// DashboardAddr is the dashboard's default address, 127.0.0.1:B+88.
func (s *State) DashboardAddr() string { return addr(s.port(offDashboard)) }

// startDashboard starts the dashboard after nginx.
func (r *runner) startDashboard(ctx context.Context, o Options) error {
	a := r.st.DashboardAddr()
	c := Component{Name: DashboardName, Kind: KindDashboard, Addr: a, Cmdline: []string{o.Binary, "dashboard", "--dir", r.st.Dir, "--addr", a}}
	return r.launch(ctx, o, c, nil,
		func(ctx context.Context, c Component) error { return checkDashboard(ctx, c.URL()) })
}

// checkDashboard passes when the dashboard answers GET /healthz with 200.
func checkDashboard(ctx context.Context, base string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
	if err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s/healthz: %w", base, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<12))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s/healthz: %s: %s", base, resp.Status, firstLine(string(body)))
	}
	return nil
}
