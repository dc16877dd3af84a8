/*
 * reg_budget.cuh - the compile-time check of a warp-specialized Hopper kernel's setmaxnreg budgets
 * (PTX ISA 9.7.17.1): one producer warpgroup lowers its registers (setmaxnreg.dec), the consumer
 * warpgroups raise theirs (setmaxnreg.inc). An .inc takes registers only from what the CTA's own
 * .decs released out of the allocation the CTA was launched with: its threads x the per-thread
 * count of __launch_bounds__(threads, 1), 65536 / threads rounded down to a multiple of 8 (ptxas
 * gives such kernels that cap: 168 at 384 threads, 128 at 512). A budget over that allocation
 * compiles and then hangs on the GPU, every consumer waiting in its .inc (the d96 backward's
 * deterministic kernels, session 28: 128 x 32 + 256 x 240 = 65,536 > 384 x 168 = 64,512).
 */
#ifndef CUDADENT_SM90_REG_BUDGET_CUH
#define CUDADENT_SM90_REG_BUDGET_CUH

/* the per-thread registers a CTA of `threads` threads is launched with (one CTA an SM) */
constexpr int cd_sm90_launch_regs(int threads) {
  return (65536 / threads) / 8 * 8 > 255 ? 248 : (65536 / threads) / 8 * 8;
}

/* whether one producer warpgroup at producer_regs and consumer_wgs warpgroups at consumer_regs fit
 * the launch allocation of their 128 (1 + consumer_wgs) threads */
constexpr bool cd_sm90_regs_fit(int producer_regs, int consumer_wgs, int consumer_regs) {
  return 128 * producer_regs + 128 * consumer_wgs * consumer_regs <=
         128 * (1 + consumer_wgs) * cd_sm90_launch_regs(128 * (1 + consumer_wgs));
}

static_assert(cd_sm90_launch_regs(384) == 168 && cd_sm90_launch_regs(512) == 128, "ptxas's caps (-Xptxas -v)");
static_assert(!cd_sm90_regs_fit(32, 2, 240) && cd_sm90_regs_fit(24, 2, 240) && cd_sm90_regs_fit(24, 3, 160),
              "the session-28 hang is refused, the rows' budgets taken");

#endif /* CUDADENT_SM90_REG_BUDGET_CUH */
