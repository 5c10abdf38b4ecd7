package config

import (
	"flag"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/stock/catalog"
)

func TestFromEnvAndFlags(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		args    []string
		want    func(Config) bool
		wantErr string
	}{
		{
			name: "env only",
			env: map[string]string{EnvMySQLDSN: "root@tcp(127.0.0.1:1)/x", EnvRedisAddrs: "a:1, b:2,,", EnvInstance: "inst-1",
				EnvStrategy: "redis", EnvMaxQty: "7"},
			want: func(c Config) bool {
				return reflect.DeepEqual(c.RedisAddrs, []string{"a:1", "b:2"}) && c.Instance == "inst-1" && c.Strategy == "redis" &&
					c.MaxQty == 7 && c.Listen == DefaultListen && c.DBInflight == DefaultDBInflight &&
					c.StreamGather == DefaultStreamGather
			},
		},
		{
			name: "db inflight from env",
			env:  map[string]string{EnvMySQLDSN: "d", EnvDBInflight: "0"},
			want: func(c Config) bool { return c.DBInflight == 0 },
		},
		{
			name: "db inflight flag",
			env:  map[string]string{EnvMySQLDSN: "d", EnvDBInflight: "0"},
			args: []string{"--db-inflight", "16"},
			want: func(c Config) bool { return c.DBInflight == 16 },
		},
		{
			name: "stream gather from env",
			env:  map[string]string{EnvMySQLDSN: "d", EnvStreamGather: "0"},
			want: func(c Config) bool { return c.StreamGather == 0 },
		},
		{
			name: "stream gather flag",
			env:  map[string]string{EnvMySQLDSN: "d", EnvStreamGather: "0"},
			args: []string{"--stream-gather", "50ms"},
			want: func(c Config) bool { return c.StreamGather == 50*time.Millisecond },
		},
		{
			name: "stream replicas from env",
			env:  map[string]string{EnvMySQLDSN: "d", EnvStreamReplicas: "1"},
			want: func(c Config) bool { return c.StreamReplicas == 1 },
		},
		{
			name: "flags override env",
			env:  map[string]string{EnvMySQLDSN: "dsn-env", EnvStrategy: "redis"},
			args: []string{"--mysql-dsn", "dsn-flag", "--strategy", "etcd", "--listen", ":9000", "--zk-servers", "z:1,z:2"},
			want: func(c Config) bool {
				return c.MySQLDSN == "dsn-flag" && c.Strategy == "etcd" && c.Listen == ":9000" && len(c.Servers[catalog.ServerZooKeeper]) == 2
			},
		},
		{
			name: "sentinels",
			env:  map[string]string{EnvMySQLDSN: "d", EnvSentinels: "s:1,s:2, s:3"},
			want: func(c Config) bool {
				return reflect.DeepEqual(c.RedisSentinels, []string{"s:1", "s:2", "s:3"}) && c.RedisMaster == DefaultRedisMaster
			},
		},
		{
			name: "sentinel flags override env",
			env:  map[string]string{EnvMySQLDSN: "d", EnvSentinels: "s:1", EnvRedisMaster: "env-master"},
			args: []string{"--redis-sentinels", "f:1,f:2", "--redis-master", "flag-master"},
			want: func(c Config) bool {
				return reflect.DeepEqual(c.RedisSentinels, []string{"f:1", "f:2"}) && c.RedisMaster == "flag-master"
			},
		},
		{name: "sentinels without master", env: map[string]string{EnvMySQLDSN: "d", EnvSentinels: "s:1"}, args: []string{"--redis-master", ""}, wantErr: "master name"},
		{name: "no DSN", env: map[string]string{EnvInstance: "i"}, wantErr: "no MySQL DSN"},
		{name: "bad max qty", env: map[string]string{EnvMySQLDSN: "d", EnvMaxQty: "many"}, wantErr: "not an integer"},
		{name: "bad db inflight", env: map[string]string{EnvMySQLDSN: "d", EnvDBInflight: "four"}, wantErr: "SECKILL_DB_INFLIGHT=\"four\": not an integer"},
		{name: "negative db inflight", env: map[string]string{EnvMySQLDSN: "d"}, args: []string{"--db-inflight", "-1"}, wantErr: "--db-inflight"},
		{name: "bad stream gather", env: map[string]string{EnvMySQLDSN: "d", EnvStreamGather: "20"}, wantErr: "SECKILL_STREAM_GATHER=\"20\": not a duration such as 20ms"},
		{name: "negative stream gather", env: map[string]string{EnvMySQLDSN: "d"}, args: []string{"--stream-gather", "-1ms"}, wantErr: "--stream-gather"},
		{name: "stream gather too long", env: map[string]string{EnvMySQLDSN: "d", EnvStreamGather: "5s"}, wantErr: "between 0 (no wait) and 1s"},
		{name: "bad stream replicas", env: map[string]string{EnvMySQLDSN: "d", EnvStreamReplicas: "one"}, wantErr: "SECKILL_STREAM_REPLICAS=\"one\": not an integer"},
		{name: "negative stream replicas", env: map[string]string{EnvMySQLDSN: "d"}, args: []string{"--stream-replicas", "-1"}, wantErr: "--stream-replicas"},
		{name: "zero max qty", env: map[string]string{EnvMySQLDSN: "d", EnvMaxQty: "0"}, wantErr: "max qty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := FromEnv(func(k string) string { return tc.env[k] })
			if err == nil {
				fs := flag.NewFlagSet("serve", flag.ContinueOnError)
				c.BindFlags(fs)
				if err = fs.Parse(tc.args); err == nil {
					err = c.Validate()
				}
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !tc.want(c) {
				t.Fatalf("got %+v, %v", c, err)
			}
		})
	}
}
