package exercises

import "github.com/seckill-lab/seckill/bench"

// Advice is what the score sheet says beside a check: the lesson that
// explains it and a hint for a failure.
type Advice struct {
	Lesson int
	Hint   Text
}

// Hints are the advice by check: the conformance suite's cases
// (lockimpl/locktest), the bench's invariants, and Oversold and Faults,
// the bench's and the fault scenarios' count of oversold units.
var Hints = map[string]Advice{
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
		ZH: "过期的持有者删掉了下一个持有者的锁（锁误删）：释放时要在一步之内比较 owner 再删除（Lua 脚本），不是自己的就返回 ErrNotHeld",
		EN: "a stale holder deleted the next holder's lock: the release must compare the owner and delete in one step (a Lua script), and return ErrNotHeld when the key is not ours"}},
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
