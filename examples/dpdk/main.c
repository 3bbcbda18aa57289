/*
 * leap-dpdk: per-flow policing on DPDK's receive path, with leaparray (the
 * leaparray-ffi staticlib) and with DPDK's own rte_meter, in one run.
 *
 * Every lcore polls queue `i` of the port under test (lcore i <-> queue i):
 * a burst of up to 32 mbufs, one TSC read per burst, each packet's flow
 * (its 5-tuple: parsed from the headers, or for a net_null port, whose
 * mbufs hold no headers, taken from a flow sequence like the pcap's) and a
 * 64-bit hash of it. Then one of four modes decides:
 *
 *   none           no policing: the loop above, and the counting below
 *   leaparray      the queue's own single-writer table (leap_local16k_t):
 *                  the burst in one call (leap_local16k_try_acquire_burst,
 *                  which prefetches each home slot 16 requests ahead)
 *   rte_meter      an rte_hash per queue (5-tuple -> position, added on a
 *                  miss) and an srTCM meter per position, color-blind,
 *                  green passes: what DPDK's documentation leads to
 *   rte_meter_idx  the meter at hash & 16383, no table (DPDK's qos_meter
 *                  example's way: flows whose hashes collide share a meter)
 *
 * In every mode each burst is counted (packets, bytes, passed, blocked) in
 * the lcore's claimed shard of one leap_shards_t (a plain store per add),
 * and every mbuf is freed (this app has no transmit side).
 *
 * Each (port, mode) runs `--rounds` timed phases of `--duration` seconds,
 * interleaved (round r runs every mode once), without the ledger. Then a
 * checked phase per (port, mode) of `--check-duration` seconds runs the
 * same loop (the same function, compiled once with the ledger, once
 * without) from fresh tables and meters, keeping a per-flow ledger apart
 * from the policers:
 *
 *   - leaparray: per flow, its passes in its current and previous gate
 *     windows (`now / window`, the table's windows). After a pass, the
 *     interval of the 2 windows ending there holds at most `--limit`
 *     (never over); a block with room in that interval is a refusal with
 *     room (none while a flow has a slot: 4,096 flows in 16,384 slots).
 *   - rte_meter: the same ledger; a token bucket admits up to CBS plus its
 *     refill, so the bound is CBS + bytes_per_period * (2 windows / period
 *     + 1) per interval (its profile's own numbers); the fullest interval
 *     is reported beside the limit.
 *   - counting: each lcore keeps its own totals of the last 16 shard
 *     windows; at the end the shards' sums over their 10 windows equal the
 *     ledgers' over the same windows, and every add returned LEAP_OK.
 *
 * The last line is `verdict: OK` or `verdict: FAIL (...)`, exit 0 or 1.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_meter.h>
#include <rte_udp.h>

#include "leaparray.h"

#define BURST 32
#define MAX_PORTS 4
#define MAX_QUEUES LEAP_SHARDS
#define METERS 16384 /* rte_hash entries, and rte_meter_idx's array */
#define LEDGER_FLOWS 65536 /* ledger index: the low 16 bits of the source */
#define SEQ_LEN 32768 /* the null port's flow sequence, as the pcap */
#define SHARD_RING 16

enum mode { M_NONE, M_LEAP, M_METER, M_METER_IDX, M_COUNT };
static const char *const mode_name[M_COUNT] = {"none", "leaparray", "rte_meter",
                                               "rte_meter_idx"};
enum { C_PACKETS, C_BYTES, C_PASSED, C_BLOCKED };

struct tuple {
	uint32_t src, dst;
	uint16_t sport, dport;
	uint32_t proto;
};

struct flow_ledger {
	uint64_t w; /* the window of `cur` */
	uint32_t cur, prev;
};

/* A queue of one port, served by one lcore. */
struct rxq {
	leap_local16k_t *table;
	struct rte_hash *hash;
	struct rte_meter_srtcm *meters; /* METERS: by rte_hash position */
	struct rte_meter_srtcm *idx_meters; /* METERS: by key & (METERS - 1) */
	struct flow_ledger *ledger;
};

/* What one lcore measured in one phase. */
struct result {
	uint64_t packets, passed, blocked, start, end;
	uint64_t over, refused_with_room, max_fill, errors, sink;
};

struct shard_window {
	uint64_t w, c[LEAP_COUNTERS];
};

/* One lcore. */
struct worker {
	uint16_t queue;
	leap_shard_writer_t writer;
	struct shard_window ring[SHARD_RING];
	uint64_t last_now;
	uint64_t shard_errors;
	uint16_t *seq;
	uint32_t seq_pos;
	struct result res;
} __rte_cache_aligned;

static struct {
	uint16_t port;
	enum mode mode;
	bool ledger;
	uint64_t deadline;
} phase;

static struct worker workers[RTE_MAX_LCORE];
static struct rxq rxqs[MAX_PORTS][MAX_QUEUES];
static bool null_port[MAX_PORTS];
static leap_shards_t shards;
static struct rte_meter_srtcm_profile profile;
static uint64_t gate_window, shard_window, limit = 64, meter_bound;

static double duration = 1.0, check_duration = 1.0;
static unsigned rounds = 3;
static uint64_t window_us = 10000;

static inline uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static inline uint64_t key_of(const struct tuple *t)
{
	uint64_t a = (uint64_t)t->src << 32 | t->dst;
	uint64_t b = (uint64_t)t->sport << 32 | (uint64_t)t->dport << 16 | t->proto;
	return mix(a ^ mix(b));
}

/* The pcap's flow `i` (mkpcap.py), in network byte order as parsed. */
static inline void tuple_of_flow(uint32_t i, struct tuple *t)
{
	t->src = rte_cpu_to_be_32(RTE_IPV4(10, 0, (i >> 8) & 255, i & 255));
	t->dst = rte_cpu_to_be_32(RTE_IPV4(192, 168, 0, 1));
	t->sport = rte_cpu_to_be_16((uint16_t)(1024 + i));
	t->dport = rte_cpu_to_be_16(9);
	t->proto = IPPROTO_UDP;
}

static inline void parse(struct rte_mbuf *m, struct tuple *t)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	memset(t, 0, sizeof(*t));
	if (m->data_len < sizeof(*eth) + sizeof(struct rte_ipv4_hdr) + sizeof(struct rte_udp_hdr) ||
	    eth->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4))
		return;
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(eth + 1);
	if ((ip->version_ihl & 0xf) != 5 || ip->next_proto_id != IPPROTO_UDP)
		return;
	const struct rte_udp_hdr *udp = (const struct rte_udp_hdr *)(ip + 1);
	t->src = ip->src_addr;
	t->dst = ip->dst_addr;
	t->sport = udp->src_port;
	t->dport = udp->dst_port;
	t->proto = ip->next_proto_id;
}

/* The ledger's decision check: `pass` was decided for flow `f` at `now`. */
static inline void ledger_book(struct rxq *q, struct result *r, uint32_t f, uint64_t now,
                               bool pass, uint64_t bound)
{
	struct flow_ledger *l = &q->ledger[f];
	uint64_t w = now / gate_window;
	if (l->w != w) {
		l->prev = l->w + 1 == w ? l->cur : 0;
		l->cur = 0;
		l->w = w;
	}
	uint64_t fill = (uint64_t)l->prev + l->cur;
	if (pass) {
		l->cur++;
		fill++;
		if (fill > bound)
			r->over++;
		if (fill > r->max_fill)
			r->max_fill = fill;
	} else if (fill < limit && phase.mode == M_LEAP) {
		r->refused_with_room++;
	}
}

static inline void shard_count(struct worker *w, uint64_t now, const uint64_t c[LEAP_COUNTERS])
{
	for (uint32_t i = 0; i < LEAP_COUNTERS; i++)
		if (leap_shard_writer_add(&w->writer, now, i, c[i]) != LEAP_OK)
			w->shard_errors++;
	uint64_t sw = now / shard_window;
	struct shard_window *s = &w->ring[sw % SHARD_RING];
	if (s->w != sw) {
		memset(s, 0, sizeof(*s));
		s->w = sw;
	}
	for (uint32_t i = 0; i < LEAP_COUNTERS; i++)
		s->c[i] += c[i];
	w->last_now = now;
}

/* The receive loop of one lcore: `mode` and `ledger` are constants in each
 * copy (see `run`). */
static __rte_always_inline void loop(struct worker *w, enum mode mode, bool ledger)
{
	const uint16_t port = phase.port;
	struct rxq *q = &rxqs[port][w->queue];
	struct result *r = &w->res;
	const bool seq = null_port[port];
	const uint64_t deadline = phase.deadline;
	const uint64_t bound = mode == M_LEAP ? limit : meter_bound;
	struct rte_mbuf *pkts[BURST];
	struct tuple t[BURST];
	const void *tp[BURST];
	uint64_t keys[BURST];
	uint32_t flow[BURST];
	leap_request_t req[BURST];
	leap_status_t dec[BURST];
	int32_t pos[BURST];
	bool pass[BURST];
	uint64_t sink = 0;

	r->start = rte_rdtsc();
	for (;;) {
		uint16_t nb = rte_eth_rx_burst(port, w->queue, pkts, BURST);
		uint64_t now = rte_rdtsc();
		if (now >= deadline) {
			rte_pktmbuf_free_bulk(pkts, nb);
			break;
		}
		if (nb == 0)
			continue;
		uint64_t c[LEAP_COUNTERS] = {nb, 0, 0, 0};
		for (uint16_t i = 0; i < nb; i++) {
			c[C_BYTES] += pkts[i]->pkt_len;
			if (seq)
				tuple_of_flow(w->seq[w->seq_pos++ % SEQ_LEN], &t[i]);
			else
				parse(pkts[i], &t[i]);
			keys[i] = key_of(&t[i]);
			if (ledger)
				flow[i] = rte_be_to_cpu_32(t[i].src) & (LEDGER_FLOWS - 1);
		}
		switch (mode) {
		case M_NONE:
			for (uint16_t i = 0; i < nb; i++) {
				sink ^= keys[i];
				pass[i] = true;
			}
			break;
		case M_LEAP:
			for (uint16_t i = 0; i < nb; i++) {
				req[i].key = keys[i];
				req[i].n = 1;
			}
			if (leap_local16k_try_acquire_burst(q->table, now, req, nb, dec) != LEAP_OK) {
				r->errors++;
				for (uint16_t i = 0; i < nb; i++)
					dec[i] = LEAP_BLOCK;
			}
			for (uint16_t i = 0; i < nb; i++)
				pass[i] = dec[i] == LEAP_PASS;
			break;
		case M_METER:
			for (uint16_t i = 0; i < nb; i++)
				tp[i] = &t[i];
			rte_hash_lookup_bulk(q->hash, tp, nb, pos);
			for (uint16_t i = 0; i < nb; i++) {
				if (pos[i] < 0) {
					/* Missed by the bulk lookup, which ran before this
					 * burst's adds: an earlier packet of the burst may
					 * have added the flow. Its meter is configured once;
					 * configuring it again would refill its bucket. */
					pos[i] = rte_hash_lookup(q->hash, &t[i]);
				}
				if (pos[i] < 0) {
					pos[i] = rte_hash_add_key(q->hash, &t[i]);
					if (pos[i] < 0) { /* full: refuse (fail closed) */
						r->errors++;
						pass[i] = false;
						continue;
					}
					rte_meter_srtcm_config(&q->meters[pos[i]], &profile);
				}
				pass[i] = rte_meter_srtcm_color_blind_check(&q->meters[pos[i]], &profile,
				                                            now, 1) == RTE_COLOR_GREEN;
			}
			break;
		case M_METER_IDX:
			for (uint16_t i = 0; i < nb; i++)
				pass[i] = rte_meter_srtcm_color_blind_check(
				                  &q->idx_meters[keys[i] & (METERS - 1)], &profile, now,
				                  1) == RTE_COLOR_GREEN;
			break;
		default:
			break;
		}
		for (uint16_t i = 0; i < nb; i++) {
			c[C_PASSED] += pass[i];
			if (ledger && mode != M_NONE)
				ledger_book(q, r, flow[i], now, pass[i], bound);
		}
		c[C_BLOCKED] = nb - c[C_PASSED];
		shard_count(w, now, c);
		r->packets += nb;
		r->passed += c[C_PASSED];
		r->blocked += c[C_BLOCKED];
		rte_pktmbuf_free_bulk(pkts, nb);
	}
	r->end = rte_rdtsc();
	r->sink = sink;
}

static int run(void *arg)
{
	(void)arg;
	struct worker *w = &workers[rte_lcore_id()];
	memset(&w->res, 0, sizeof(w->res));
#define CASE(m)                                                                                    \
	case m:                                                                                    \
		if (phase.ledger)                                                                  \
			loop(w, m, true);                                                          \
		else                                                                               \
			loop(w, m, false);                                                         \
		break;
	switch (phase.mode) {
		CASE(M_NONE)
		CASE(M_LEAP)
		CASE(M_METER)
		CASE(M_METER_IDX)
	default:
		break;
	}
	return 0;
}

/* A leaparray call's error. */
static void die(const char *what, int32_t status)
{
	rte_exit(EXIT_FAILURE, "%s: %s\n", what, leap_status_str(status));
}

/* A DPDK call's error (a negative errno). */
static void die_rte(const char *what, int rc)
{
	rte_exit(EXIT_FAILURE, "%s: %s\n", what, rte_strerror(-rc));
}

/* Fresh policers for a checked phase: tables zeroed and initialised, the
 * rte_hash emptied, meters configured on insert (and the index meters now). */
static void reset_policers(uint16_t port, unsigned nq)
{
	for (unsigned i = 0; i < nq; i++) {
		struct rxq *q = &rxqs[port][i];
		memset(q->table, 0, sizeof(*q->table));
		leap_status_t s = leap_local16k_init(q->table, gate_window, limit);
		if (s != LEAP_OK)
			die("leap_local16k_init", s);
		rte_hash_reset(q->hash);
		for (unsigned j = 0; j < METERS; j++)
			rte_meter_srtcm_config(&q->idx_meters[j], &profile);
		memset(q->ledger, 0, LEDGER_FLOWS * sizeof(*q->ledger));
	}
}

static struct result run_phase(uint16_t port, enum mode mode, bool ledger, double seconds,
                               unsigned nq)
{
	phase.port = port;
	phase.mode = mode;
	phase.ledger = ledger;
	phase.deadline = rte_rdtsc() + (uint64_t)(seconds * rte_get_tsc_hz());
	rte_eal_mp_remote_launch(run, NULL, CALL_MAIN);
	rte_eal_mp_wait_lcore();
	struct result t = {0};
	unsigned lcore;
	t.start = UINT64_MAX;
	RTE_LCORE_FOREACH(lcore) {
		struct result *r = &workers[lcore].res;
		t.packets += r->packets;
		t.passed += r->passed;
		t.blocked += r->blocked;
		t.over += r->over;
		t.refused_with_room += r->refused_with_room;
		t.errors += r->errors;
		t.max_fill = RTE_MAX(t.max_fill, r->max_fill);
		t.start = RTE_MIN(t.start, r->start);
		t.end = RTE_MAX(t.end, r->end);
	}
	(void)nq;
	return t;
}

static double mpps(const struct result *r)
{
	return r->packets / ((double)(r->end - r->start) / rte_get_tsc_hz()) / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void port_init(uint16_t port, unsigned nq, struct rte_mempool *pool)
{
	struct rte_eth_conf conf;
	memset(&conf, 0, sizeof(conf));
	int rc = rte_eth_dev_configure(port, nq, nq, &conf);
	if (rc < 0)
		die_rte("rte_eth_dev_configure", rc);
	for (unsigned q = 0; q < nq; q++) {
		rc = rte_eth_rx_queue_setup(port, q, 1024, rte_eth_dev_socket_id(port), NULL, pool);
		if (rc < 0)
			die_rte("rte_eth_rx_queue_setup", rc);
		rc = rte_eth_tx_queue_setup(port, q, 1024, rte_eth_dev_socket_id(port), NULL);
		if (rc < 0)
			die_rte("rte_eth_tx_queue_setup", rc);
	}
	rc = rte_eth_dev_start(port);
	if (rc < 0)
		die_rte("rte_eth_dev_start", rc);
	struct rte_eth_dev_info info;
	rc = rte_eth_dev_info_get(port, &info);
	if (rc < 0)
		die_rte("rte_eth_dev_info_get", rc);
	null_port[port] = strcmp(info.driver_name, "net_null") == 0;

	for (unsigned i = 0; i < nq; i++) {
		struct rxq *q = &rxqs[port][i];
		q->table = aligned_alloc(LEAP_LOCAL16K_ALIGN, sizeof(leap_local16k_t));
		q->meters = calloc(METERS, sizeof(*q->meters));
		q->idx_meters = calloc(METERS, sizeof(*q->idx_meters));
		q->ledger = calloc(LEDGER_FLOWS, sizeof(*q->ledger));
		char name[RTE_HASH_NAMESIZE];
		snprintf(name, sizeof(name), "flows_%u_%u", port, i);
		struct rte_hash_parameters hp = {
			.name = name,
			.entries = METERS,
			.key_len = sizeof(struct tuple),
			.hash_func = rte_hash_crc,
			.hash_func_init_val = 0,
			.socket_id = (int)rte_socket_id(),
		};
		q->hash = rte_hash_create(&hp);
		if (!q->table || !q->meters || !q->idx_meters || !q->ledger || !q->hash)
			die_rte("out of memory", -ENOMEM);
	}
	reset_policers(port, nq);
}

static void usage(void)
{
	fprintf(stderr, "usage: leap-dpdk EAL-ARGS -- [--duration S] [--rounds R] "
	                "[--check-duration S] [--limit N] [--window-us US]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int rc = rte_eal_init(argc, argv);
	if (rc < 0)
		rte_exit(EXIT_FAILURE, "rte_eal_init failed\n");
	argc -= rc;
	argv += rc;
	for (int i = 1; i < argc; i++) {
		if (i + 1 >= argc)
			usage();
		char *end;
		if (!strcmp(argv[i], "--duration"))
			duration = strtod(argv[++i], &end);
		else if (!strcmp(argv[i], "--check-duration"))
			check_duration = strtod(argv[++i], &end);
		else if (!strcmp(argv[i], "--rounds"))
			rounds = (unsigned)strtoul(argv[++i], &end, 10);
		else if (!strcmp(argv[i], "--limit"))
			limit = strtoull(argv[++i], &end, 10);
		else if (!strcmp(argv[i], "--window-us"))
			window_us = strtoull(argv[++i], &end, 10);
		else
			usage();
		if (*end)
			usage();
	}
	if (!(duration > 0) || !(check_duration > 0) || rounds == 0 || rounds > 64 ||
	    window_us == 0)
		usage();

	unsigned nq = rte_lcore_count();
	if (nq > MAX_QUEUES)
		rte_exit(EXIT_FAILURE, "at most %d lcores (one shard each)\n", MAX_QUEUES);
	uint16_t nports = rte_eth_dev_count_avail();
	if (nports == 0 || nports > MAX_PORTS)
		rte_exit(EXIT_FAILURE, "1 to %d ports (vdevs), got %u\n", MAX_PORTS, nports);

	uint64_t hz = rte_get_tsc_hz();
	gate_window = hz / 1000000 * window_us;
	shard_window = gate_window * 10;
	leap_status_t s = leap_shards_init(&shards, shard_window);
	if (s != LEAP_OK)
		die("leap_shards_init", s);
	/* srTCM at the same long-run rate as the gate: `limit` per 2 windows,
	 * a burst of `limit`; one "byte" per packet. */
	struct rte_meter_srtcm_params mp = {
		.cir = limit * 1000000 / (2 * window_us),
		.cbs = limit,
		.ebs = 0,
	};
	rc = rte_meter_srtcm_profile_config(&profile, &mp);
	if (rc != 0)
		die_rte("rte_meter_srtcm_profile_config", rc);
	meter_bound = profile.cbs +
	              profile.cir_bytes_per_period * (2 * gate_window / profile.cir_period + 1);

	/* net_pcap with infinite_rx keeps every packet of its file in mbufs of
	 * this pool, per queue (32,768 for mkpcap.py's file). */
	struct rte_mempool *pool = rte_pktmbuf_pool_create(
	        "mbufs", 49152 * nq + 16383, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, (int)rte_socket_id());
	if (!pool)
		rte_exit(EXIT_FAILURE, "rte_pktmbuf_pool_create: %s\n", rte_strerror(rte_errno));

	unsigned lcore, qi = 0;
	RTE_LCORE_FOREACH(lcore) {
		struct worker *w = &workers[lcore];
		w->queue = (uint16_t)qi;
		s = leap_shards_claim(&shards, qi, &w->writer);
		if (s != LEAP_OK)
			die("leap_shards_claim", s);
		/* The null port's flows: as mkpcap.py, half from 16 heavy flows. */
		w->seq = malloc(SEQ_LEN * sizeof(*w->seq));
		if (!w->seq)
			die_rte("out of memory", -ENOMEM);
		uint64_t x = 50 + qi;
		for (uint32_t i = 0; i < SEQ_LEN; i++) {
			x = mix(x + 0x9e3779b97f4a7c15ULL);
			w->seq[i] = (x & 1) ? (uint16_t)(((x >> 8) & 15) * 256) : (uint16_t)((x >> 16) & 4095);
		}
		qi++;
	}
	for (uint16_t p = 0; p < nports; p++)
		port_init(p, nq, pool);

	printf("leap-dpdk: %u lcore(s), %u port(s); TSC %" PRIu64 " Hz; limit %" PRIu64
	       " per flow per %" PRIu64 " us (2 windows of %" PRIu64 " us); srTCM cir %" PRIu64
	       "/s cbs %" PRIu64 " (bound %" PRIu64 " per interval)\n",
	       nq, nports, hz, limit, 2 * window_us, window_us, (uint64_t)mp.cir, (uint64_t)mp.cbs,
	       meter_bound);

	/* Timed phases, interleaved: round r runs every (port, mode) once. */
	static double rates[MAX_PORTS][M_COUNT][64];
	static double pass_share[MAX_PORTS][M_COUNT];
	for (unsigned r = 0; r < rounds; r++)
		for (uint16_t p = 0; p < nports; p++)
			for (int m = 0; m < M_COUNT; m++) {
				struct result t = run_phase(p, m, false, duration, nq);
				rates[p][m][r] = mpps(&t);
				pass_share[p][m] = t.packets ? (double)t.passed / t.packets : 0;
			}

	bool ok = true;
	char why[512] = "";
	for (uint16_t p = 0; p < nports; p++) {
		struct rte_eth_dev_info info;
		rte_eth_dev_info_get(p, &info);
		printf("\nport %u (%s%s), %u lcore(s), median of %u timed runs of %.2f s "
		       "(no ledger):\n",
		       p, info.driver_name, null_port[p] ? ": flows from a sequence" : ": parsed",
		       nq, rounds, duration);
		printf("  %-14s %8s %10s %8s   | checked run (%.2f s, ledger on): %8s %s\n", "mode",
		       "Mpps", "ns/packet", "passed", check_duration, "Mpps", "decisions");
		double base = 0;
		for (int m = 0; m < M_COUNT; m++) {
			double v[64];
			memcpy(v, rates[p][m], rounds * sizeof(double));
			qsort(v, rounds, sizeof(double), cmp_double);
			double med = rounds % 2 ? v[rounds / 2] : (v[rounds / 2 - 1] + v[rounds / 2]) / 2;
			double ns = 1000.0 * nq / med;
			if (m == M_NONE)
				base = ns;
			reset_policers(p, nq);
			struct result c = run_phase(p, m, true, check_duration, nq);
			char verdict[200];
			if (m == M_NONE) {
				snprintf(verdict, sizeof(verdict), "(nothing decided)");
			} else if (m == M_LEAP) {
				snprintf(verdict, sizeof(verdict),
				         "%" PRIu64 " passed, %" PRIu64 " blocked; fullest interval %" PRIu64
				         "/%" PRIu64 "; over the limit %" PRIu64
				         ", refused with room %" PRIu64,
				         c.passed, c.blocked, c.max_fill, limit, c.over,
				         c.refused_with_room);
				if (c.over || c.refused_with_room || c.errors || !c.passed || !c.blocked) {
					ok = false;
					snprintf(why + strlen(why), sizeof(why) - strlen(why),
					         " port %u leaparray: %" PRIu64 " over, %" PRIu64
					         " refused with room, %" PRIu64 " errors, %" PRIu64
					         " passed, %" PRIu64 " blocked;",
					         p, c.over, c.refused_with_room, c.errors, c.passed,
					         c.blocked);
				}
			} else {
				snprintf(verdict, sizeof(verdict),
				         "%" PRIu64 " passed, %" PRIu64 " blocked; fullest interval %" PRIu64
				         "/%" PRIu64 " (bucket bound %" PRIu64 "); over the bound %" PRIu64,
				         c.passed, c.blocked, c.max_fill, limit, meter_bound, c.over);
				if (c.over || c.errors || !c.passed || !c.blocked) {
					ok = false;
					snprintf(why + strlen(why), sizeof(why) - strlen(why),
					         " port %u %s: %" PRIu64 " over its bound, %" PRIu64
					         " errors;",
					         p, mode_name[m], c.over, c.errors);
				}
			}
			printf("  %-14s %8.2f %10.1f %7.1f%%   | %8.2f  %s", mode_name[m], med, ns,
			       100 * pass_share[p][m], mpps(&c), verdict);
			if (m != M_NONE)
				printf("; %+.1f ns/packet against none", ns - base);
			printf("\n");
		}
	}

	/* Counting: the shards' sums over their windows against the ledgers'. */
	uint64_t now = 0, shard_errors = 0;
	RTE_LCORE_FOREACH(lcore) {
		now = RTE_MAX(now, workers[lcore].last_now);
		shard_errors += workers[lcore].shard_errors;
	}
	uint64_t got[LEAP_COUNTERS], want[LEAP_COUNTERS] = {0};
	s = leap_shards_sums(&shards, now, got);
	if (s != LEAP_OK)
		die("leap_shards_sums", s);
	uint64_t wnow = now / shard_window;
	RTE_LCORE_FOREACH(lcore) {
		for (unsigned j = 0; j < SHARD_RING; j++) {
			struct shard_window *sw = &workers[lcore].ring[j];
			if (sw->w <= wnow && sw->w + LEAP_WINDOWS > wnow)
				for (unsigned i = 0; i < LEAP_COUNTERS; i++)
					want[i] += sw->c[i];
		}
	}
	printf("\ncounting (shards, the last %d windows of %.0f ms): packets %" PRIu64 "/%" PRIu64
	       ", bytes %" PRIu64 "/%" PRIu64 ", passed %" PRIu64 "/%" PRIu64 ", blocked %" PRIu64
	       "/%" PRIu64 " (shards/ledger), add errors %" PRIu64 "\n",
	       LEAP_WINDOWS, 1000.0 * shard_window / hz, got[0], want[0], got[1], want[1], got[2],
	       want[2], got[3], want[3], shard_errors);
	if (memcmp(got, want, sizeof(got)) != 0 || shard_errors || want[0] == 0) {
		ok = false;
		snprintf(why + strlen(why), sizeof(why) - strlen(why),
		         " counting: shards differ from the ledger or an add failed;");
	}

	for (uint16_t p = 0; p < nports; p++)
		rte_eth_dev_stop(p);
	if (ok)
		printf("verdict: OK (leaparray never over the limit and never refused with room; "
		       "rte_meter within its bucket bound; counting exact)\n");
	else
		printf("verdict: FAIL (%s)\n", why);
	rte_eal_cleanup();
	return ok ? 0 : 1;
}
