/*
 * main() for a fuzz target built without libFuzzer (tests/fuzz/fuzz.py replay): runs every
 * input file named (or found in a directory named) once, in name order. An input that runs
 * for SPARKCDC_FUZZ_TIMEOUT seconds (default 30) is a finding: no input may make a decoder
 * loop; ASan's hard_rss_limit_mb bounds memory the same way.
 */
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *current = "";

static void on_alarm(int sig) {
    (void)sig;
    static const char msg[] = "\n*** fuzz finding: an input ran past the timeout (a loop?)\n";
    (void)!write(2, msg, sizeof msg - 1);
    (void)!write(2, current, strlen(current));
    abort();
}

static int run_file(const char *path, unsigned timeout) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        perror(path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *data = malloc(size > 0 ? (size_t)size : 1);
    if (data == NULL || fread(data, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(2);
    }
    fclose(f);
    current = path;
    alarm(timeout);
    LLVMFuzzerTestOneInput(data, (size_t)size);
    alarm(0);
    free(data);
    return 1;
}

static int by_name(const struct dirent **a, const struct dirent **b) {
    return strcmp((*a)->d_name, (*b)->d_name);
}

int main(int argc, char **argv) {
    const char *t = getenv("SPARKCDC_FUZZ_TIMEOUT");
    unsigned timeout = t ? (unsigned)atoi(t) : 30;
    signal(SIGALRM, on_alarm);
    LLVMFuzzerInitialize(&argc, &argv);
    int count = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            return 2;
        }
        if (!S_ISDIR(st.st_mode)) {
            count += run_file(argv[i], timeout);
            continue;
        }
        struct dirent **names;
        int n = scandir(argv[i], &names, NULL, by_name);
        for (int k = 0; k < n; k++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], names[k]->d_name);
            if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) count += run_file(path, timeout);
            free(names[k]);
        }
        free(names);
    }
    printf("%d inputs replayed\n", count);
    return 0;
}
