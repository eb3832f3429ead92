/* A power cut, for the tests (tests/api/power_cut.rs): loaded with
 * LD_PRELOAD into the server, it journals every write to a file under
 * POWERCUT_DIR with the bytes it overwrites, and every fsync/fdatasync
 * that made them durable. After the server is killed, the test undoes
 * the writes no sync covered, and the data dir is what the disk would
 * hold had the power gone at that moment.
 *
 * The model: a write is durable once an fsync or fdatasync of its file
 * starts after it; sync_file_range makes nothing durable (it flushes no
 * disk cache and no file size). A rename or a removal is durable once
 * an fsync of its directory starts after it (of both directories, for a
 * rename between two); the file it replaced or removed is copied aside
 * first (POWERCUT_JOURNAL.<sequence>), so that a cut can bring it back.
 * Creating a file is taken as durable at once (optimistic).
 *
 * Journal records (POWERCUT_JOURNAL, appended under one lock, each
 * 'W'/'T'/'S'/'N'/'U', then u64 sequence, u32 path length, path):
 *   'W' write:    u64 offset, u64 size before, u64 n, n bytes it overwrote
 *   'T' truncate: u64 new size, u64 size before, u64 n, n bytes cut off
 *   'S' sync:     u64 every record of this path below this sequence
 *                 is durable (for a directory: the renames and removals
 *                 in it)
 *   'N' rename:   u32 length, the new path, u8 1 if the file it replaced
 *                 was copied aside
 *   'U' removal:  u8 1 if the file was copied aside
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

/* Stops the server, saying where and why (a journal it cannot keep is no
 * test). */
#define fail()                                                             \
  do {                                                                     \
    dprintf(2, "powercut shim: line %d: %s\n", __LINE__, strerror(errno)); \
    abort();                                                               \
  } while (0)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int journal = -1;
static uint64_t seq = 0;
static const char *dir = NULL;
static size_t dir_len = 0;
static const char *journal_path = NULL;

static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static ssize_t (*real_pwrite64)(int, const void *, size_t, off_t);
static int (*real_ftruncate64)(int, off_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_rename)(const char *, const char *);
static int (*real_unlink)(const char *);

__attribute__((constructor)) static void init(void) {
  real_write = dlsym(RTLD_NEXT, "write");
  real_writev = dlsym(RTLD_NEXT, "writev");
  real_pwrite64 = dlsym(RTLD_NEXT, "pwrite64");
  real_ftruncate64 = dlsym(RTLD_NEXT, "ftruncate64");
  real_fsync = dlsym(RTLD_NEXT, "fsync");
  real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
  real_rename = dlsym(RTLD_NEXT, "rename");
  real_unlink = dlsym(RTLD_NEXT, "unlink");
  dir = getenv("POWERCUT_DIR");
  const char *path = getenv("POWERCUT_JOURNAL");
  if (dir == NULL || path == NULL) {
    dir = NULL;
    return;
  }
  dir_len = strlen(dir);
  journal_path = path;
  journal = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (journal < 0) fail();
}

/* Whether an absolute path is POWERCUT_DIR or lies under it. */
static int under(const char *path) {
  size_t n = strlen(path);
  return n >= dir_len && strncmp(path, dir, dir_len) == 0 &&
         (path[dir_len] == '/' || path[dir_len] == 0);
}

/* The file's path when it lies under POWERCUT_DIR (or is it: a
 * directory's fsync). */
static int watched(int fd, char *path, size_t cap) {
  if (dir == NULL || fd == journal) return 0;
  char link[64];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, cap - 1);
  if (n <= 0) return 0;
  path[n] = 0;
  return under(path);
}

/* `p` made absolute (against the working directory) into `out`. */
static int absolute(const char *p, char *out, size_t cap) {
  if (p[0] == '/') return snprintf(out, cap, "%s", p) < (int)cap;
  char cwd[4096];
  if (getcwd(cwd, sizeof cwd) == NULL) return 0;
  return snprintf(out, cap, "%s/%s", cwd, p) < (int)cap;
}

static void put(const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    ssize_t w = real_write(journal, c, n);
    if (w <= 0) fail();
    c += w;
    n -= (size_t)w;
  }
}

static void head(char kind, const char *path) {
  uint32_t len = (uint32_t)strlen(path);
  put(&kind, 1);
  put(&seq, 8);
  put(&len, 4);
  put(path, len);
  seq++;
}

/* Journals the bytes [at, at + n) of fd's file before they change. */
static void save(char kind, int fd, const char *path, uint64_t at, uint64_t n) {
  struct stat st;
  if (fstat(fd, &st) != 0) fail();
  uint64_t before = (uint64_t)st.st_size;
  uint64_t kept = at >= before ? 0 : (before - at < n ? before - at : n);
  char *old = malloc(kept ? kept : 1);
  if (old == NULL) fail();
  /* pread needs read access: a file opened write-only is read through a
   * descriptor of its own. */
  int from = fd;
  if (kept > 0 && (fcntl(fd, F_GETFL) & O_ACCMODE) == O_WRONLY) {
    from = open(path, O_RDONLY | O_CLOEXEC);
    if (from < 0) fail();
  }
  for (uint64_t got = 0; got < kept;) {
    ssize_t r = pread(from, old + got, kept - got, (off_t)(at + got));
    if (r <= 0) {
      dprintf(2, "powercut shim: reading the old bytes of %s\n", path);
      fail();
    }
    got += (uint64_t)r;
  }
  if (from != fd) close(from);
  head(kind, path);
  put(&at, 8);
  put(&before, 8);
  put(&kept, 8);
  put(old, kept);
  free(old);
}

static uint64_t position(int fd) {
  if (fcntl(fd, F_GETFL) & O_APPEND) {
    struct stat st;
    if (fstat(fd, &st) != 0) fail();
    return (uint64_t)st.st_size;
  }
  return (uint64_t)lseek(fd, 0, SEEK_CUR);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t at) {
  char path[4096];
  if (!watched(fd, path, sizeof path)) return real_pwrite64(fd, buf, n, at);
  pthread_mutex_lock(&lock);
  save('W', fd, path, (uint64_t)at, n);
  ssize_t r = real_pwrite64(fd, buf, n, at);
  pthread_mutex_unlock(&lock);
  return r;
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t at) { return pwrite64(fd, buf, n, at); }

ssize_t write(int fd, const void *buf, size_t n) {
  char path[4096];
  if (!watched(fd, path, sizeof path)) return real_write(fd, buf, n);
  pthread_mutex_lock(&lock);
  save('W', fd, path, position(fd), n);
  ssize_t r = real_write(fd, buf, n);
  pthread_mutex_unlock(&lock);
  return r;
}

ssize_t writev(int fd, const struct iovec *iov, int count) {
  char path[4096];
  if (!watched(fd, path, sizeof path)) return real_writev(fd, iov, count);
  size_t n = 0;
  for (int i = 0; i < count; i++) n += iov[i].iov_len;
  pthread_mutex_lock(&lock);
  save('W', fd, path, position(fd), n);
  ssize_t r = real_writev(fd, iov, count);
  pthread_mutex_unlock(&lock);
  return r;
}

int ftruncate64(int fd, off_t len) {
  char path[4096];
  if (!watched(fd, path, sizeof path)) return real_ftruncate64(fd, len);
  pthread_mutex_lock(&lock);
  /* Saves what a shrink cuts off (nothing when it grows). */
  save('T', fd, path, (uint64_t)len, UINT64_MAX - (uint64_t)len);
  int r = real_ftruncate64(fd, len);
  pthread_mutex_unlock(&lock);
  return r;
}

int ftruncate(int fd, off_t len) { return ftruncate64(fd, len); }

/* The records of this file below the sequence taken before the sync are
 * durable once it returns. */
static int synced(int fd, int (*real)(int)) {
  char path[4096];
  if (!watched(fd, path, sizeof path)) return real(fd);
  pthread_mutex_lock(&lock);
  uint64_t upto = seq;
  pthread_mutex_unlock(&lock);
  int r = real(fd);
  if (r == 0) {
    pthread_mutex_lock(&lock);
    head('S', path);
    put(&upto, 8);
    pthread_mutex_unlock(&lock);
  }
  return r;
}

int fsync(int fd) { return synced(fd, real_fsync); }

int fdatasync(int fd) { return synced(fd, real_fdatasync); }

/* Copies the regular file at `path` to POWERCUT_JOURNAL.<at>; 1 if it did. */
static uint8_t set_aside(const char *path, uint64_t at) {
  struct stat st;
  if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  char copy[4200];
  snprintf(copy, sizeof copy, "%s.%llu", journal_path, (unsigned long long)at);
  int in = open(path, O_RDONLY | O_CLOEXEC);
  if (in < 0) return 0;
  int out = open(copy, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (out < 0) fail();
  char buf[65536];
  for (;;) {
    ssize_t r = read(in, buf, sizeof buf);
    if (r < 0) fail();
    if (r == 0) break;
    for (ssize_t done = 0; done < r;) {
      ssize_t w = real_write(out, buf + done, (size_t)(r - done));
      if (w <= 0) fail();
      done += w;
    }
  }
  close(in);
  close(out);
  return 1;
}

int rename(const char *from, const char *to) {
  char a[4096], b[4096];
  if (dir == NULL || !absolute(from, a, sizeof a) || !absolute(to, b, sizeof b) ||
      !(under(a) || under(b)))
    return real_rename(from, to);
  pthread_mutex_lock(&lock);
  uint8_t saved = set_aside(b, seq);
  int r = real_rename(from, to);
  if (r == 0) {
    head('N', a);
    uint32_t len = (uint32_t)strlen(b);
    put(&len, 4);
    put(b, len);
    put(&saved, 1);
  }
  pthread_mutex_unlock(&lock);
  return r;
}

int unlink(const char *path) {
  char a[4096];
  if (dir == NULL || !absolute(path, a, sizeof a) || !under(a)) return real_unlink(path);
  pthread_mutex_lock(&lock);
  uint8_t saved = set_aside(a, seq);
  int r = real_unlink(path);
  if (r == 0) {
    head('U', a);
    put(&saved, 1);
  }
  pthread_mutex_unlock(&lock);
  return r;
}
