/* How mpi-4rank-oversubscribed.csv was measured (Open MPI 4.1.4, a 2-core VM):
 *   mpicc -O2 -o sweep mpi-4rank-oversubscribed.c -lm
 *   mpirun --oversubscribe --bind-to none -n 4 ./sweep > mpi-4rank-oversubscribed.csv
 * MPI_Allreduce (float, sum, in place) timed per iteration, slowest rank
 * per iteration, 8 B to 32 MiB by factors of 4, 5 warm-up and 20 timed
 * iterations: the sweep of scripts/demo.sh without GPUs. Prints the course
 * CSV (times in seconds). Real, noisy measurements; not synthetic. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const long max_bytes = 32L << 20;
    float *buf = malloc(max_bytes);
    for (long i = 0; i < max_bytes / 4; i++) buf[i] = 1.0f;
    if (rank == 0) printf("backend,world_size,total_elements,total_bytes,average_time,stdev_time\n");
    for (long bytes = 8; bytes <= max_bytes; bytes *= 4) {
        int count = (int)(bytes / 4);
        double times[20];
        for (int it = 0; it < 25; it++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            double mine = MPI_Wtime() - t0, slowest;
            MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            if (it >= 5) times[it - 5] = slowest;
        }
        double mean = 0, var = 0;
        for (int i = 0; i < 20; i++) mean += times[i] / 20;
        for (int i = 0; i < 20; i++) var += (times[i] - mean) * (times[i] - mean) / 19;
        if (rank == 0) printf("mpi,%d,%d,%ld,%.6e,%.3e\n", size, count, bytes, mean, sqrt(var));
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
