package exercises

import (
	"strings"

	"github.com/seckill-lab/seckill/bench"
)

// Advice is what the score sheet says beside a check: the lesson that
// explains it and a hint for a failure.
type Advice struct {
	Lesson int
	Hint   Text
}

// Cause is what a failed check saw, read from its figure (Observe): the
// grader's hint names the cause, not the check, since one check fails for
// several reasons (a lock that never expires and a release that deletes
// another's key both fail ExpiresWithoutRenewal).
type Cause string

// The causes a check's figure shows.
const (
	CauseNone                Cause = ""
	CauseExpirySecondCommand Cause = "expiry-in-a-second-command"
	CauseNoExpiry            Cause = "no-expiry"
	CauseRenewalNotOwned     Cause = "renewal-not-owned"
	CauseDeletedNotOwned     Cause = "deleted-not-owned"
	CauseRenewalNeverStops   Cause = "renewal-never-stops"
	CauseRenewalAfterRelease Cause = "renewal-after-release"
	CauseTwoHolders          Cause = "two-holders"
	CauseTokenNone           Cause = "token-none"
	CauseTokenBackwards      Cause = "token-backwards"
	CauseLossNotNoticed      Cause = "loss-not-noticed"
	CauseLeaseLost           Cause = "lease-lost-without-renewal"
	CauseHeldPastTTL         Cause = "held-past-ttl"
	CauseSalesStopped        Cause = "sales-stopped"
)

// observations are the phrases the checks' figures (lockimpl/locktest, the
// exercises' conformance cases, internal/grade's fault checks) use for
// what they saw, in the order Observe looks for them: the more specific
// first.
var observations = []struct {
	cause   Cause
	phrases []string
}{
	{CauseExpirySecondCommand, []string{"between its SET and its"}},
	{CauseNoExpiry, []string{"has no expiry"}},
	{CauseRenewalNotOwned, []string{"extended a key it did not own"}},
	{CauseDeletedNotOwned, []string{"did not own"}},
	{CauseRenewalNeverStops, []string{"the watchdog never stops"}},
	{CauseRenewalAfterRelease, []string{"a renewal ran after release"}},
	{CauseTwoHolders, []string{"two holders at once"}},
	{CauseTokenNone, []string{"(no token"}},
	{CauseTokenBackwards, []string{"went backwards", "did not increase"}},
	{CauseLossNotNoticed, []string{"did not notice"}},
	{CauseLeaseLost, []string{"ran out without renewal", "lease lost while held"}},
	{CauseHeldPastTTL, []string{"after the first holder's TTL", "still waited"}},
	{CauseSalesStopped, []string{"sales stopped for"}},
}

// Observe returns the cause a failed check's figure shows, or CauseNone.
func Observe(figure string) Cause {
	for _, o := range observations {
		for _, p := range o.phrases {
			if strings.Contains(figure, p) {
				return o.cause
			}
		}
	}
	return CauseNone
}

// Advise returns the advice for a check of exercise whose key in Hints is
// check ("Faults:SCENARIO" falls back to "Faults") and whose figure is
// figure: for a failure, by the cause the figure shows, else by the check;
// in either case the exercise's own advice first (ByExercise), since
// exercises ask for different code (the fencing exercise's students write
// no SET NX PX, the watchdog's no release).
func Advise(exercise, check, figure string, failed bool) (Cause, Advice) {
	var cause Cause
	if failed {
		cause = Observe(figure)
	}
	var keys []string
	if cause != CauseNone {
		keys = append(keys, "cause:"+string(cause))
	}
	keys = append(keys, check)
	if base, _, ok := strings.Cut(check, ":"); ok {
		keys = append(keys, base)
	}
	for _, k := range keys {
		if a, ok := ByExercise[exercise][k]; ok {
			return cause, a
		}
		if a, ok := Hints[k]; ok {
			return cause, a
		}
	}
	return cause, Advice{}
}

// Hints are the advice every exercise shares, by "cause:CAUSE" (Observe)
// and by check: the conformance suite's cases (lockimpl/locktest and the
// exercises' own), the bench's invariants, and Oversold and Faults, the
// bench's and the fault scenarios' count of oversold units.
var Hints = map[string]Advice{
	"cause:" + string(CauseNoExpiry): {8, Text{
		ZH: "锁的 key 没有过期时间（PTTL -1）：持有者崩溃后锁永远不释放，销售停止；过期时间要和加锁在同一条命令里设置（SET key owner NX PX ttl）",
		EN: "the lock key has no expiry (PTTL -1): once its holder dies the lock is never freed and sales stop; set the expiry in the same command that takes the lock (SET key owner NX PX ttl)"}},
	"cause:" + string(CauseExpirySecondCommand): {8, Text{
		ZH: "过期时间是第二条命令设置的（先 SETNX 再 PEXPIRE）：持有者在两条命令之间崩溃，key 就永不过期；用一条 SET key owner NX PX ttl",
		EN: "the expiry comes in a second command (SETNX, then PEXPIRE): a holder that dies between the two leaves a key that never expires; use one SET key owner NX PX ttl"}},
	"cause:" + string(CauseDeletedNotOwned): {9, Text{
		ZH: "释放删掉了不属于自己的锁（锁误删）：无论是直接 DEL，还是先在 Go 里比较 owner 再 DEL，都不是一步；要在一个 Lua 脚本里比较 owner 再删除，不是自己的就返回 ErrNotHeld",
		EN: "a release deleted a lock it did not own: a plain DEL checks nothing, and comparing the owner in Go before a DEL is two steps; compare and delete in one step (a Lua script), and return ErrNotHeld when the key is not ours"}},
	"cause:" + string(CauseTwoHolders): {9, Text{
		ZH: "两个持有者同时在临界区：加锁必须是一条原子命令（SET key owner NX PX ttl），不能先 GET 再 SET",
		EN: "two holders at once: taking the lock must be one atomic command (SET key owner NX PX ttl), not a GET then a SET"}},
	"cause:" + string(CauseHeldPastTTL): {8, Text{
		ZH: "锁在 TTL 之后仍被占着：key 的过期时间要按 opts.TTL 设置（毫秒，PX），并且和 SET 在同一条命令里",
		EN: "the lock was still held after its TTL: give the key opts.TTL as its expiry (in ms, PX), in the SET itself"}},
	"cause:" + string(CauseSalesStopped): {8, Text{
		ZH: "持有者崩溃后销售停止了：它的锁没有在 TTL 后释放；锁的 key 必须带过期时间",
		EN: "sales stopped after the holder crashed: its lock did not free at its TTL; the lock's key must expire"}},
	"cause:" + string(CauseLeaseLost): {10, Text{
		ZH: "持锁超过 TTL 后锁丢了：持有期间每 TTL/3 续期一次（lockimpl.KeepAlive + 只续自己的 Lua PEXPIRE）",
		EN: "the lock was lost while held past its TTL: renew it every TTL/3 while held (lockimpl.KeepAlive with a Lua PEXPIRE of our own key only)"}},
	"cause:" + string(CauseLossNotNoticed): {10, Text{
		ZH: "锁在服务端被删掉或被别人拿走后，持有者没有发现：续期发现 key 不是自己的时要调用 lease.MarkLost",
		EN: "the holder did not notice its lock was gone at the server: when a renewal finds the key not its own, call lease.MarkLost"}},
	"cause:" + string(CauseRenewalNotOwned): {10, Text{
		ZH: "续期延长了别人的锁：只有 GET key == owner 时才 PEXPIRE，放在一个 Lua 脚本里，不是自己的就返回 ErrNotHeld",
		EN: "the renewal extended another holder's key: PEXPIRE only while GET key == owner, in one Lua script, and return ErrNotHeld otherwise"}},
	"cause:" + string(CauseRenewalNeverStops): {10, Text{
		ZH: "Unlock 之后续期还在继续：看门狗必须在释放时停下（watch 返回的 stop，释放的第一步调用；lockimpl.KeepAlive 提供这个 stop）",
		EN: "renewals went on after Unlock: the watchdog must stop at the release (the stop watch returns, called first thing in the release; lockimpl.KeepAlive gives you that stop)"}},
	"cause:" + string(CauseRenewalAfterRelease): {10, Text{
		ZH: "释放之后又跑了一次续期：先停看门狗（并等待进行中的续期），再删除 key",
		EN: "a renewal ran after the release: stop the watchdog first (and wait for a renewal in flight), then delete the key"}},
	"cause:" + string(CauseTokenNone): {22, Text{
		ZH: "lease 上的 token 是 0（没有 token）：存储端写入时什么也检查不了；把持有者 key 的 create revision 作为 token 放进 lease",
		EN: "the lease carries token 0 (none), so the store checks nothing at the write: put the create revision of the holder's key on the lease as its token"}},
	"cause:" + string(CauseTokenBackwards): {22, Text{
		ZH: "fencing token 没有严格递增（相等或倒退）：存储端只接受比见过的最新 token 更大的（fence < token），相等的 token 分不出旧持有者；用持有者 key 的 create revision",
		EN: "the fencing token repeated or went backwards: the store accepts only a token above the newest it saw (fence < token), and an equal one cannot tell a stale holder; use the create revision of the holder's key"}},
	"Build": {1, Text{
		ZH: "代码编译不通过：先让 `go build ./exercises/...` 通过",
		EN: "the code does not compile: make `go build ./exercises/...` pass first"}},
	"MutualExclusion": {9, Text{
		ZH: "两个持有者同时在临界区：加锁必须是一条原子命令（SET key owner NX PX ttl），不能先 GET 再 SET",
		EN: "two holders at once: taking the lock must be one atomic command (SET key owner NX PX ttl), not a GET then a SET"}},
	"TryLockWhileHeld": {7, Text{
		ZH: "锁被占用时 TryLock 必须返回 lockimpl.ErrLocked，释放后又能拿到",
		EN: "TryLock on a held lock must return lockimpl.ErrLocked, and succeed once it is released"}},
	"CancelWhileWaiting": {7, Text{
		ZH: "等待中的 Lock 在 ctx 结束时要返回 ctx.Err()，且不留下任何东西",
		EN: "a waiting Lock must return ctx.Err() once ctx is done, and leave nothing behind"}},
	"DoubleUnlock": {9, Text{
		ZH: "第二次 Unlock 要返回 lockimpl.ErrNotHeld",
		EN: "a second Unlock must return lockimpl.ErrNotHeld"}},
	"ExpiresWithoutRenewal": {8, Text{
		ZH: "不续期时锁要在 TTL 后过期，过期的持有者释放时不能删掉下一个持有者的锁：看上面的数字是哪一种",
		EN: "without renewal the lock must expire at its TTL, and a stale holder's release must not delete the next holder's lock: the figure above says which failed"}},
	"ExpiryInOneCommand": {8, Text{
		ZH: "过期时间要和加锁在同一条命令里：SET key owner NX PX ttl",
		EN: "the expiry must come with the lock, in one command: SET key owner NX PX ttl"}},
	"ReleaseOnlyOwn": {9, Text{
		ZH: "释放只能删除仍属于自己的 key，在一个 Lua 脚本里比较再删除",
		EN: "the release must delete the key only while it is ours: compare and delete in one Lua script"}},
	"RenewsOnlyOwn": {10, Text{
		ZH: "续期只能延长仍属于自己的 key，发现不是自己的就 lease.MarkLost",
		EN: "the renewal must extend only a key that is still ours, and call lease.MarkLost when it is not"}},
	"RenewalStops": {10, Text{
		ZH: "释放之后不能再有续期：释放的第一步停掉看门狗",
		EN: "no renewal may run after the release: stop the watchdog first thing in the release"}},
	"HeldPastTTL": {10, Text{
		ZH: "持锁超过 TTL 后锁丢了：持有期间每 TTL/3 续期一次（lockimpl.KeepAlive + 只续自己的 Lua PEXPIRE）",
		EN: "the lock was lost while held past its TTL: renew it every TTL/3 while held (lockimpl.KeepAlive with a Lua PEXPIRE of our own key only)"}},
	"LostLease": {10, Text{
		ZH: "锁在服务端被删掉后，持有者没有发现：续期发现 key 不是自己的时要调用 lease.MarkLost",
		EN: "the holder did not notice its lock was deleted at the server: when a renewal finds the key gone, call lease.MarkLost"}},
	"TokensIncrease": {22, Text{
		ZH: "fencing token 必须非 0 且逐个持有者严格递增：用持有者 key 的 create revision",
		EN: "the fencing token must be non-zero and strictly increase from holder to holder: use the create revision of the holder's key"}},
	"Oversold": {1, Text{
		ZH: "卖出的比库存多：两个持有者同时读到同一库存（看上面一致性检查的失败项）",
		EN: "more was sold than the stock: two holders read the same stock (see the conformance failures above)"}},
	"Faults": {11, Text{
		ZH: "故障场景下超卖：看场景报告里哪一次 strike 后出现了两个持有者",
		EN: "oversold under a fault: the scenario's report shows after which strike two holders wrote"}},
	"Faults:instance-crash": {8, Text{
		ZH: "持有者崩溃后：锁要在 TTL 后释放，其他实例继续卖，且不能超卖",
		EN: "after the holder crashed: the lock must free at its TTL, the others sell on, and nothing oversells"}},
	"Faults:etcd-lease": {22, Text{
		ZH: "持有者停顿超过租约后又写入：存储端只有靠递增的 fencing token 才能拒绝它",
		EN: "the holder paused past its lease, then wrote: the store can refuse it only by an increasing fencing token"}},
	bench.InvMutualExclusion: {9, Text{
		ZH: "实例的锁事件显示临界区重叠：两个实例同时持锁",
		EN: "the instances' lock events show overlapping critical sections: two instances held the lock at once"}},
	bench.InvNoLostUpdate: {1, Text{
		ZH: "库存写丢了：一个持有者的写覆盖了另一个的",
		EN: "stock writes were lost: one holder's write overwrote another's"}},
	bench.InvLinearizable: {1, Text{
		ZH: "购买的历史不可线性化：有两次购买读到了同一库存",
		EN: "the purchases' history is not linearizable: two purchases read the same stock"}},
	bench.InvOKHasOrder: {5, Text{
		ZH: "有 2xx 应答没有订单",
		EN: "a 2xx answer has no order"}},
	bench.InvNotAllFailed: {7, Text{
		ZH: "几乎所有购买都失败：锁拿不到（看实例日志 seckill logs inst-1）",
		EN: "almost every purchase failed: the lock cannot be taken (see the instance's log: seckill logs inst-1)"}},
}

// ByExercise is the advice of one exercise that differs from Hints, by
// exercise and then by the same keys: what the student of that exercise
// writes, and nothing they were given.
var ByExercise = map[string]map[string]Advice{
	"watchdog": {
		"cause:" + string(CauseNoExpiry): {10, Text{
			ZH: "锁的 key 没有过期时间（PTTL -1）：续期要把 key PEXPIRE 到 TTL，不能 PERSIST，也不能不带 PX 重新 SET",
			EN: "the lock key has no expiry (PTTL -1): the renewal must PEXPIRE the key to the TTL, never PERSIST it or SET it again without PX"}},
		"cause:" + string(CauseTwoHolders): {10, Text{
			ZH: "两个持有者同时在临界区：TryLock 和释放是给定的、正确的，看你的续期：只能延长仍属于自己的 key",
			EN: "two holders at once: TryLock and the release are given and correct, so look at your renewal: it must extend only a key that still holds this owner"}},
		"cause:" + string(CauseDeletedNotOwned): {10, Text{
			ZH: "别人的锁被删了：释放是给定的（Lua 比较后删除），检查你的续期有没有改写 key 里的 owner",
			EN: "another holder's key was deleted: the release is given (a Lua compare-and-delete), so check that your renewal never rewrites the key's owner"}},
		"cause:" + string(CauseHeldPastTTL): {10, Text{
			ZH: "设置了 Options.NoRenew 时锁要在 TTL 后过期：l.noRenew 为真时不要启动续期",
			EN: "with Options.NoRenew the lock must expire at its TTL: do not start the renewal when l.noRenew is set"}},
		"cause:" + string(CauseSalesStopped): {10, Text{
			ZH: "持有者崩溃后销售停止了：key 要一直带着 TTL 过期时间，续期只能在持有者活着时延长它",
			EN: "sales stopped after the holder crashed: the key must keep its TTL expiry, and only a living holder's renewal may extend it"}},
		"Oversold": {10, Text{
			ZH: "工作 400 ms 比 TTL 300 ms 长，卖重了：锁在持有期间过期；持有期间每 TTL/3 续期",
			EN: "work of 400 ms, longer than the 300 ms TTL, sold twice: the lock expired while held; renew it every TTL/3 while held"}},
	},
	"fencing": {
		"cause:" + string(CauseTwoHolders): {22, Text{
			ZH: "两个持有者同时在临界区：etcd 的 Mutex 是给定的、互斥正确；如果你改了 acquire，改回去：token 不负责互斥，存储端用它拒绝旧持有者",
			EN: "two holders at once: the etcd Mutex is given and excludes correctly; if you changed acquire, restore it: the token excludes nobody, the store uses it to refuse a stale holder"}},
		"cause:" + string(CauseSalesStopped): {22, Text{
			ZH: "持有者停顿后销售停止了：锁要在它的 session 租约到期时释放；不要在别处让 session 续命",
			EN: "sales stopped after the holder paused: the lock must free when its session lease ends; do not keep the session alive from elsewhere"}},
		"Oversold": {22, Text{
			ZH: "开着 fencing 还超卖：存储端接受了旧持有者的写入，说明它的 token 不比新持有者小；token 必须严格递增",
			EN: "oversold with fencing on: the store accepted a stale holder's write, so its token was not below the new holder's; the token must strictly increase"}},
	},
}

// The exercises whose students do not write the acquisition get their own
// advice for a mutual-exclusion failure too, not the SET NX PX one.
func init() {
	for _, m := range ByExercise {
		if a, ok := m["cause:"+string(CauseTwoHolders)]; ok {
			m["MutualExclusion"] = a
			m[bench.InvMutualExclusion] = a
		}
	}
}
