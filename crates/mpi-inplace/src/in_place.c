/* In-place all-reduce: MPI_IN_PLACE differs between MPI implementations
   ((void *)1 in Open MPI, (void *)-1 in MPICH), so it is taken from mpi.h. */
#include <mpi.h>

int collbench_allreduce_in_place(void *buffer, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    return MPI_Allreduce(MPI_IN_PLACE, buffer, count, type, op, comm);
}
