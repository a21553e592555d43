/* mmapw FILE DIR - write through a shared mapping twice, for the
 * snapshot pre-copy test (tests/local-images.bats): make FILE one page of
 * zeros on disk, map it,
 * write "A" into it, create DIR/ready; when DIR/go appears, write "B" over
 * the same (still mapped) page, create DIR/done, and sleep.  Nothing is
 * ever msync'd: the second write reaches the file only through the page
 * cache, as a database's writes through a mapping do. */
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

static void touch(const char *dir, const char *name)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	close(open(p, O_WRONLY | O_CREAT, 0644));
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 64;
	/* The page's blocks are written and synced first, so that the writes
	 * below only dirty the page cache (no block allocation that a
	 * journal commit would write back early). */
	static char page[4096];
	int fd = open(argv[1], O_RDWR | O_CREAT, 0644);
	if (fd < 0 || write(fd, page, sizeof(page)) != (ssize_t)sizeof(page) || fsync(fd) < 0)
		return 1;
	char *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return 1;
	m[0] = 'A';
	touch(argv[2], "ready");
	char go[4096];
	snprintf(go, sizeof(go), "%s/go", argv[2]);
	while (access(go, F_OK) != 0)
		usleep(10000);
	m[0] = 'B';
	touch(argv[2], "done");
	for (;;)
		pause();
}
