/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A minimal io_uring on raw system calls, for the selftests that need one
 * without liburing: set up a ring, queue SQEs, enter, pop CQEs.
 */
#ifndef TIMENS_URING_RAW_H
#define TIMENS_URING_RAW_H

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/io_uring.h>

struct ring {
	int fd;
	unsigned int *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
	unsigned int features;
};

/* a ring of 8 entries set up with IORING_SETUP_ @flags: 0, or -errno of io_uring_setup/mmap */
static inline int ring_setup_flags(struct ring *r, unsigned int flags)
{
	struct io_uring_params p;
	size_t sq_sz, cq_sz;
	char *sq, *cq;

	memset(&p, 0, sizeof(p));
	p.flags = flags;
	r->fd = syscall(__NR_io_uring_setup, 8, &p);
	if (r->fd < 0)
		return -errno;
	r->features = p.features;
	sq_sz = p.sq_off.array + p.sq_entries * sizeof(unsigned int);
	cq_sz = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	if (p.features & IORING_FEAT_SINGLE_MMAP) {
		if (cq_sz > sq_sz)
			sq_sz = cq_sz;
		cq_sz = sq_sz;
	}
	sq = mmap(NULL, sq_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
		  IORING_OFF_SQ_RING);
	if (sq == MAP_FAILED)
		return -errno;
	if (p.features & IORING_FEAT_SINGLE_MMAP)
		cq = sq;
	else
		cq = mmap(NULL, cq_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
			  IORING_OFF_CQ_RING);
	if (cq == MAP_FAILED)
		return -errno;
	r->sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQES);
	if (r->sqes == MAP_FAILED)
		return -errno;
	r->sq_tail = (unsigned int *)(sq + p.sq_off.tail);
	r->sq_mask = (unsigned int *)(sq + p.sq_off.ring_mask);
	r->sq_array = (unsigned int *)(sq + p.sq_off.array);
	r->cq_head = (unsigned int *)(cq + p.cq_off.head);
	r->cq_tail = (unsigned int *)(cq + p.cq_off.tail);
	r->cq_mask = (unsigned int *)(cq + p.cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
	return 0;
}

static inline struct io_uring_sqe *get_sqe(struct ring *r)
{
	unsigned int tail = *r->sq_tail, idx = tail & *r->sq_mask;
	struct io_uring_sqe *sqe = &r->sqes[idx];

	memset(sqe, 0, sizeof(*sqe));
	r->sq_array[idx] = idx;
	__atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
	return sqe;
}

static inline int ring_setup(struct ring *r)
{
	return ring_setup_flags(r, 0);
}

/* io_uring_enter(), again after EINTR: its result, or -errno */
static inline int enter(struct ring *r, unsigned int submit, unsigned int wait, unsigned int flags,
		 void *arg, size_t argsz)
{
	int ret;

	do
		ret = syscall(__NR_io_uring_enter, r->fd, submit, wait, flags, arg, argsz);
	while (ret < 0 && errno == EINTR);
	return ret < 0 ? -errno : ret;
}

/* pop a completion, if any: 1 and *cqe, or 0 */
static inline int pop_cqe(struct ring *r, struct io_uring_cqe *cqe)
{
	unsigned int head = *r->cq_head;

	if (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE))
		return 0;
	*cqe = r->cqes[head & *r->cq_mask];
	__atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
	return 1;
}

/*
 * pop @n completions into @cqe[0..n-1], waiting for each that has not come:
 * how many were popped, fewer than @n if io_uring_enter() failed (errno)
 */
static inline int wait_cqes(struct ring *r, struct io_uring_cqe *cqe, int n)
{
	int got = 0;

	while (got < n) {
		if (pop_cqe(r, &cqe[got]))
			got++;
		else if (enter(r, 0, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0)
			break;
	}
	return got;
}

#endif /* TIMENS_URING_RAW_H */
