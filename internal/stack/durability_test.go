package stack

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/internal/config"
	"github.com/seckill-lab/seckill/internal/server"
	"github.com/seckill-lab/seckill/internal/testenv"
)

// TestDurability starts a stack at each non-default level and reads back
// what the servers run with: fsync puts Redis on an AOF fsynced at every
// write and keeps MariaDB flushing at every commit; none takes the fsync
// off MariaDB and ZooKeeper and puts etcd's data on tmpfs.
func TestDurability(t *testing.T) {
	requireTools(t)
	base := testenv.Port(21800)
	tests := []struct {
		level    string
		backends []Backend
		redis    map[string]string // CONFIG GET name -> value
		innodb   string            // @@innodb_flush_log_at_trx_commit
		check    func(t *testing.T, st *State)
	}{
		{server.DurabilityFsync, []Backend{BackendRedis, BackendMySQL}, map[string]string{"appendonly": "yes", "appendfsync": "always"}, "1", nil},
		{server.DurabilityNone, []Backend{BackendRedis, BackendMySQL, Backend("etcd"), Backend("zookeeper")}, map[string]string{"appendonly": "no"}, "2",
			func(t *testing.T, st *State) {
				etcd, _ := st.Component("etcd")
				if !slices.Contains(etcd.Cmdline, "--unsafe-no-fsync") {
					t.Errorf("etcd runs %v: want --unsafe-no-fsync", etcd.Cmdline)
				}
				cfg, err := os.ReadFile(filepath.Join(st.Dir, "zookeeper", "zoo.cfg"))
				if err != nil || !strings.Contains(string(cfg), "forceSync=no") {
					t.Errorf("zoo.cfg (%v): want forceSync=no in\n%s", err, cfg)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.level, func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			t.Setenv("SECKILL_ADMIN_TOKEN", "")
			var progress bytes.Buffer
			st, err := Up(ctx, Options{Dir: dir, BasePort: base, Instances: 1, Binary: seckillBin, Out: &progress, Backends: tc.backends, Durability: tc.level})
			t.Cleanup(func() { _ = Down(context.Background(), dir, io.Discard) })
			if err != nil {
				t.Fatalf("up --durability %s: %v\n%s", tc.level, err, progress.String())
			}
			if loaded, err := Load(dir); err != nil || loaded.Durability != tc.level {
				t.Errorf("state.json durability %q (%v), want %q", loaded.Durability, err, tc.level)
			}
			var status bytes.Buffer
			if err := WriteTable(&status, st, nil); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(status.String(), "durability:  "+tc.level+" (redis: ") {
				t.Errorf("status does not say the durability:\n%s", status.String())
			}
			env := map[string]string{}
			for _, kv := range st.Env() {
				env[kv[0]] = kv[1]
			}
			rdb := redis.NewClient(&redis.Options{Addr: strings.Split(env[config.EnvRedisAddrs], ",")[0]})
			defer rdb.Close()
			for name, want := range tc.redis {
				got, err := rdb.ConfigGet(ctx, name).Result()
				if err != nil || got[name] != want {
					t.Errorf("redis CONFIG GET %s = %v (%v), want %s", name, got, err, want)
				}
			}
			db, err := sql.Open("mysql", env[config.EnvMySQLDSN])
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var flush string
			if err := db.QueryRowContext(ctx, "SELECT @@innodb_flush_log_at_trx_commit").Scan(&flush); err != nil || flush != tc.innodb {
				t.Errorf("innodb_flush_log_at_trx_commit = %q (%v), want %s", flush, err, tc.innodb)
			}
			if tc.check != nil {
				tc.check(t, st)
			}
			if err := Down(ctx, dir, io.Discard); err != nil {
				t.Fatal(err)
			}
			if tmp := filepath.Join(server.Tmpfs, "seckill-"+strconv.Itoa(base)); tc.level == server.DurabilityNone && dirExists(tmp) {
				t.Errorf("down left %s on tmpfs", tmp)
			}
		})
	}
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
