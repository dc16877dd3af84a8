/*
 * fwd_trace.cuh - an optional timeline of the sm90 forward, for dev/sm90_fwd (check_fwd.py
 * trace): compiled to nothing unless SM90_TRACE is defined, which only the dev library does.
 *
 * One thread per warpgroup (thread 0 of the producer, thread 0 of each consumer) appends events
 * (SM clock64, event id, a small argument) to its own row of a device buffer set with
 * cudaMemcpyToSymbol(cd_sm90_fwd_trace_buf, ...); rows are (CTA, warpgroup), SM90_TRACE_MAX_EVENTS
 * events each, two u64 words per event. The row pointer is loaded once at kernel start and the
 * clock is read first, so an event costs a clock read and two stores. Durations are read within
 * one row (one SM's clock), never across rows.
 */
#ifndef CUDADENT_SM90_FWD_TRACE_CUH
#define CUDADENT_SM90_FWD_TRACE_CUH

enum {
  SM90_EV_TILE = 0,    /* consumer: tile decoded (argument: key blocks of the tile) */
  SM90_EV_Q_READY = 1, /* consumer: Q of the tile arrived */
  SM90_EV_S0 = 2,      /* consumer: first S = Q K^T complete */
  SM90_EV_LOOP = 3,    /* consumer: last P V complete */
  SM90_EV_EPI = 4,     /* consumer: O store issued */
  SM90_EV_P_TILE = 5,  /* producer: tile decoded */
  SM90_EV_P_Q = 6,     /* producer: Q slot free, Q load issued */
  /* per key block of the overlapped main loop (cd_sm90_fwd_consumer_step) */
  SM90_EV_TURN = 7,    /* consumer: its turn to issue GEMMs (pingpong barrier passed) */
  SM90_EV_ISSUED = 8,  /* consumer: S and P V issued, turn passed on */
  SM90_EV_S_READY = 9, /* consumer: S complete */
  SM90_EV_SOFTMAX = 10, /* consumer: softmax done */
  SM90_EV_PV_DONE = 11  /* consumer: P V complete */
};

#ifdef SM90_TRACE
#define SM90_TRACE_MAX_EVENTS 1024
__device__ unsigned long long *cd_sm90_fwd_trace_buf;

__device__ __forceinline__ unsigned long long *cd_sm90_fwd_trace_row(int wg) {
  unsigned long long *buf = cd_sm90_fwd_trace_buf;
  return buf == nullptr ? nullptr
                        : buf + 2ll * SM90_TRACE_MAX_EVENTS * ((long long)blockIdx.x * 4 + wg);
}

/* branch-free (a predicated store, the caller's condition folded into the predicate): a branch
 * inside the kernel's main loop would change how ptxas places wgmma waits, and with it what is
 * being measured */
__device__ __forceinline__ void cd_sm90_fwd_trace(unsigned long long *row, int &count, int ev,
                                                  int arg, bool cond) {
  const long long t = clock64();
  const int ok = cond && row != nullptr && count < SM90_TRACE_MAX_EVENTS;
  unsigned long long *e = row + 2 * (ok ? count : 0);
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %3, 0;\n@p st.global.v2.u64 [%0], {%1, %2};\n}\n" ::"l"(e),
      "l"((unsigned long long)t), "l"((unsigned long long)(ev | (arg << 8))), "r"(ok)
      : "memory");
  count += ok;
}
#define SM90_TRACE_DECL(wg)                          \
  unsigned long long *trace_row_ = cd_sm90_fwd_trace_row(wg); \
  int trace_count_ = 0
#define SM90_TRACE_EVENT(cond, ev, arg) \
  cd_sm90_fwd_trace(trace_row_, trace_count_, (ev), (arg), (cond))
/* the trace state handed to a function the kernel calls */
#define SM90_TRACE_PARAMS , unsigned long long *trace_row_, int &trace_count_
#define SM90_TRACE_ARGS , trace_row_, trace_count_
#else
#define SM90_TRACE_PARAMS
#define SM90_TRACE_ARGS
#define SM90_TRACE_DECL(wg) \
  do {                      \
  } while (0)
#define SM90_TRACE_EVENT(cond, ev, arg) \
  do {                                  \
  } while (0)
#endif

#endif /* CUDADENT_SM90_FWD_TRACE_CUH */
