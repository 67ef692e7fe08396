"""slurmrestd Slurm-26.05.5 (data_parser/v0.0.45) response models: made
by scripts/generate-slurmrestd-models.py from the spec in data/openapi/; do not edit."""

from __future__ import annotations

from builtins import list as list_aliased
from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, Field, RootModel


class OpenapiWarning(BaseModel):
    description: Annotated[str | None, Field(description="Long form warning description")] = None
    source: Annotated[
        str | None, Field(description="Source of warning or where warning was first detected")
    ] = None


class OpenapiError(BaseModel):
    description: Annotated[str | None, Field(description="Long form error description")] = None
    error_number: Annotated[int | None, Field(description="Slurm numeric error identifier")] = None
    error: Annotated[str | None, Field(description="Short form error description")] = None
    source: Annotated[str | None, Field(description="Source of error or where error was first detected")] = (
        None
    )


class Plugin(BaseModel):
    type: Annotated[str | None, Field(description="Slurm plugin type (if applicable)")] = None
    name: Annotated[str | None, Field(description="Slurm plugin name (if applicable)")] = None
    data_parser: Annotated[str | None, Field(description="Slurm data_parser plugin")] = None
    accounting_storage: Annotated[str | None, Field(description="Slurm accounting plugin")] = None


class Client(BaseModel):
    source: Annotated[str | None, Field(description="Client source description")] = None
    user: Annotated[str | None, Field(description="Client user (if known)")] = None
    group: Annotated[str | None, Field(description="Client group (if known)")] = None


class Version(BaseModel):
    major: Annotated[str | None, Field(description="Slurm release major version")] = None
    micro: Annotated[str | None, Field(description="Slurm release micro version")] = None
    minor: Annotated[str | None, Field(description="Slurm release minor version")] = None


class Slurm(BaseModel):
    version: Version | None = None
    release: Annotated[str | None, Field(description="Slurm release string")] = None
    cluster: Annotated[str | None, Field(description="Slurm cluster name")] = None


class StringArray(RootModel[list[str]]):
    root: list[str]


class JobArrayResponseMsgEntry(BaseModel):
    job_id: Annotated[int | None, Field(description="Job ID for updated job")] = None
    step_id: Annotated[str | None, Field(description="Step ID for updated job")] = None
    error: Annotated[str | None, Field(description="Verbose update status or error")] = None
    error_code: Annotated[int | None, Field(description="Verbose update status or error")] = None
    why: Annotated[str | None, Field(description="Update response message")] = None


class ControllerPing(BaseModel):
    hostname: Annotated[str | None, Field(description="Target for ping")] = None
    responding: Annotated[bool, Field(description="If ping RPC responded with pong from controller")]
    latency: Annotated[
        int | None, Field(description="Number of microseconds it took to successfully ping or timeout")
    ] = None
    primary: Annotated[
        bool,
        Field(
            description="Is responding slurmctld the primary controller (Is responding slurmctld the primary controller)"
        ),
    ]
    status: Annotated[str | None, Field(description="Ping status code")] = None


class Uint64NoValStruct(BaseModel):
    set: Annotated[
        bool | None, Field(description="True if number has been set; False if number is unset")
    ] = None
    infinite: Annotated[
        bool | None,
        Field(description='True if number has been set to infinite; "set" and "number" will be ignored'),
    ] = None
    number: Annotated[
        int | None,
        Field(
            description='If "set" is True the number will be set with value; otherwise ignore number contents'
        ),
    ] = None


class CertFlag(StrEnum):
    TOKEN_SET = "TOKEN_SET"


class NextStateAfterRebootEnum(StrEnum):
    INVALID = "INVALID"
    UNKNOWN = "UNKNOWN"
    DOWN = "DOWN"
    IDLE = "IDLE"
    ALLOCATED = "ALLOCATED"
    ERROR = "ERROR"
    MIXED = "MIXED"
    FUTURE = "FUTURE"
    EXTERNAL = "EXTERNAL"
    RESERVED = "RESERVED"
    UNDRAIN = "UNDRAIN"
    CLOUD = "CLOUD"
    RESUME = "RESUME"
    DRAIN = "DRAIN"
    COMPLETING = "COMPLETING"
    NOT_RESPONDING = "NOT_RESPONDING"
    POWERED_DOWN = "POWERED_DOWN"
    FAIL = "FAIL"
    POWERING_UP = "POWERING_UP"
    MAINTENANCE = "MAINTENANCE"
    REBOOT_REQUESTED = "REBOOT_REQUESTED"
    REBOOT_CANCELED = "REBOOT_CANCELED"
    POWERING_DOWN = "POWERING_DOWN"
    DYNAMIC_FUTURE = "DYNAMIC_FUTURE"
    REBOOT_ISSUED = "REBOOT_ISSUED"
    PLANNED = "PLANNED"
    INVALID_REG = "INVALID_REG"
    POWER_DOWN = "POWER_DOWN"
    POWER_UP = "POWER_UP"
    POWER_DRAIN = "POWER_DRAIN"
    POWER_DOWN_ASAP = "POWER_DOWN_ASAP"
    POWER_DOWN_FORCE = "POWER_DOWN_FORCE"
    DYNAMIC_NORM = "DYNAMIC_NORM"
    BLOCKED = "BLOCKED"


class StateEnum(StrEnum):
    INVALID = "INVALID"
    UNKNOWN = "UNKNOWN"
    DOWN = "DOWN"
    IDLE = "IDLE"
    ALLOCATED = "ALLOCATED"
    ERROR = "ERROR"
    MIXED = "MIXED"
    FUTURE = "FUTURE"
    EXTERNAL = "EXTERNAL"
    RESERVED = "RESERVED"
    UNDRAIN = "UNDRAIN"
    CLOUD = "CLOUD"
    RESUME = "RESUME"
    DRAIN = "DRAIN"
    COMPLETING = "COMPLETING"
    NOT_RESPONDING = "NOT_RESPONDING"
    POWERED_DOWN = "POWERED_DOWN"
    FAIL = "FAIL"
    POWERING_UP = "POWERING_UP"
    MAINTENANCE = "MAINTENANCE"
    REBOOT_REQUESTED = "REBOOT_REQUESTED"
    REBOOT_CANCELED = "REBOOT_CANCELED"
    POWERING_DOWN = "POWERING_DOWN"
    DYNAMIC_FUTURE = "DYNAMIC_FUTURE"
    REBOOT_ISSUED = "REBOOT_ISSUED"
    PLANNED = "PLANNED"
    INVALID_REG = "INVALID_REG"
    POWER_DOWN = "POWER_DOWN"
    POWER_UP = "POWER_UP"
    POWER_DRAIN = "POWER_DRAIN"
    POWER_DOWN_ASAP = "POWER_DOWN_ASAP"
    POWER_DOWN_FORCE = "POWER_DOWN_FORCE"
    DYNAMIC_NORM = "DYNAMIC_NORM"
    BLOCKED = "BLOCKED"


class Uint32NoValStruct(BaseModel):
    set: Annotated[
        bool | None, Field(description="True if number has been set; False if number is unset")
    ] = None
    infinite: Annotated[
        bool | None,
        Field(description='True if number has been set to infinite; "set" and "number" will be ignored'),
    ] = None
    number: Annotated[
        int | None,
        Field(
            description='If "set" is True the number will be set with value; otherwise ignore number contents'
        ),
    ] = None


class CsvString(RootModel[list[str]]):
    root: list[str]


class AcctGatherEnergy(BaseModel):
    average_watts: Annotated[int | None, Field(description="Average power consumption, in watts")] = None
    base_consumed_energy: Annotated[
        int | None,
        Field(
            description="The energy consumed between when the node was powered on and the last time it was registered by slurmd, in joules"
        ),
    ] = None
    consumed_energy: Annotated[
        int | None,
        Field(
            description="The energy consumed between the last time the node was registered by the slurmd daemon and the last node energy accounting sample, in joules"
        ),
    ] = None
    current_watts: Annotated[
        Uint32NoValStruct | None,
        Field(
            description="The instantaneous power consumption at the time of the last node energy accounting sample, in watts (32 bit integer number with flags)"
        ),
    ] = None
    previous_consumed_energy: Annotated[
        int | None, Field(description="Previous value of consumed_energy")
    ] = None
    last_collected: Annotated[
        int | None,
        Field(
            description="Time when energy data was last retrieved (UNIX timestamp) (UNIX timestamp or time string recognized by Slurm (e.g., '[MM/DD[/YY]-]HH:MM[:SS]'))"
        ),
    ] = None


class Flag(StrEnum):
    KILL_INVALID_DEPENDENCY = "KILL_INVALID_DEPENDENCY"
    NO_KILL_INVALID_DEPENDENCY = "NO_KILL_INVALID_DEPENDENCY"
    HAS_STATE_DIRECTORY = "HAS_STATE_DIRECTORY"
    TESTING_BACKFILL = "TESTING_BACKFILL"
    GRES_BINDING_ENFORCED = "GRES_BINDING_ENFORCED"
    TEST_NOW_ONLY = "TEST_NOW_ONLY"
    SEND_JOB_ENVIRONMENT = "SEND_JOB_ENVIRONMENT"
    SPREAD_JOB = "SPREAD_JOB"
    PREFER_MINIMUM_NODE_COUNT = "PREFER_MINIMUM_NODE_COUNT"
    JOB_KILL_HURRY = "JOB_KILL_HURRY"
    SKIP_TRES_STRING_ACCOUNTING = "SKIP_TRES_STRING_ACCOUNTING"
    SIBLING_CLUSTER_UPDATE_ONLY = "SIBLING_CLUSTER_UPDATE_ONLY"
    HETEROGENEOUS_JOB = "HETEROGENEOUS_JOB"
    EXACT_TASK_COUNT_REQUESTED = "EXACT_TASK_COUNT_REQUESTED"
    EXACT_CPU_COUNT_REQUESTED = "EXACT_CPU_COUNT_REQUESTED"
    TESTING_WHOLE_NODE_BACKFILL = "TESTING_WHOLE_NODE_BACKFILL"
    TOP_PRIORITY_JOB = "TOP_PRIORITY_JOB"
    ACCRUE_COUNT_CLEARED = "ACCRUE_COUNT_CLEARED"
    GRES_BINDING_DISABLED = "GRES_BINDING_DISABLED"
    JOB_WAS_RUNNING = "JOB_WAS_RUNNING"
    JOB_ACCRUE_TIME_RESET = "JOB_ACCRUE_TIME_RESET"
    CRON_JOB = "CRON_JOB"
    EXACT_MEMORY_REQUESTED = "EXACT_MEMORY_REQUESTED"
    EXTERNAL_JOB = "EXTERNAL_JOB"
    USING_DEFAULT_ACCOUNT = "USING_DEFAULT_ACCOUNT"
    USING_DEFAULT_PARTITION = "USING_DEFAULT_PARTITION"
    USING_DEFAULT_QOS = "USING_DEFAULT_QOS"
    USING_DEFAULT_WCKEY = "USING_DEFAULT_WCKEY"
    DEPENDENT = "DEPENDENT"
    MAGNETIC = "MAGNETIC"
    PARTITION_ASSIGNED = "PARTITION_ASSIGNED"
    BACKFILL_ATTEMPTED = "BACKFILL_ATTEMPTED"
    SCHEDULING_ATTEMPTED = "SCHEDULING_ATTEMPTED"
    STEPMGR_ENABLED = "STEPMGR_ENABLED"
    SPREAD_SEGMENTS = "SPREAD_SEGMENTS"
    CONSOLIDATE_SEGMENTS = "CONSOLIDATE_SEGMENTS"
    EXPEDITED_REQUEUE = "EXPEDITED_REQUEUE"
    JOB_IMPLICIT_MAX_NODES = "JOB_IMPLICIT_MAX_NODES"


class JobStateEnum(StrEnum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUSPENDED = "SUSPENDED"
    COMPLETED = "COMPLETED"
    CANCELLED = "CANCELLED"
    FAILED = "FAILED"
    TIMEOUT = "TIMEOUT"
    NODE_FAIL = "NODE_FAIL"
    PREEMPTED = "PREEMPTED"
    BOOT_FAIL = "BOOT_FAIL"
    DEADLINE = "DEADLINE"
    OUT_OF_MEMORY = "OUT_OF_MEMORY"
    LAUNCH_FAILED = "LAUNCH_FAILED"
    REQUEUED = "REQUEUED"
    REQUEUE_HOLD = "REQUEUE_HOLD"
    SPECIAL_EXIT = "SPECIAL_EXIT"
    RESIZING = "RESIZING"
    CONFIGURING = "CONFIGURING"
    COMPLETING = "COMPLETING"
    STOPPED = "STOPPED"
    RECONFIG_FAIL = "RECONFIG_FAIL"
    POWER_UP_NODE = "POWER_UP_NODE"
    REVOKED = "REVOKED"
    REQUEUE_FED = "REQUEUE_FED"
    RESV_DEL_HOLD = "RESV_DEL_HOLD"
    SIGNALING = "SIGNALING"
    STAGE_OUT = "STAGE_OUT"
    EXPEDITING = "EXPEDITING"


class MailTypeEnum(StrEnum):
    BEGIN = "BEGIN"
    END = "END"
    FAIL = "FAIL"
    REQUEUE = "REQUEUE"
    TIME_100_ = "TIME=100%"
    TIME_90_ = "TIME=90%"
    TIME_80_ = "TIME=80%"
    TIME_50_ = "TIME=50%"
    STAGE_OUT = "STAGE_OUT"
    ARRAY_TASKS = "ARRAY_TASKS"
    INVALID_DEPENDENCY = "INVALID_DEPENDENCY"


class ProfileEnum(StrEnum):
    NOT_SET = "NOT_SET"
    NONE = "NONE"
    ENERGY = "ENERGY"
    LUSTRE = "LUSTRE"
    NETWORK = "NETWORK"
    TASK = "TASK"


class SharedEnum(StrEnum):
    none = "none"
    oversubscribe = "oversubscribe"
    user = "user"
    mcs = "mcs"
    topo = "topo"


class Uint16NoValStruct(BaseModel):
    set: Annotated[
        bool | None, Field(description="True if number has been set; False if number is unset")
    ] = None
    infinite: Annotated[
        bool | None,
        Field(description='True if number has been set to infinite; "set" and "number" will be ignored'),
    ] = None
    number: Annotated[
        int | None,
        Field(
            description='If "set" is True the number will be set with value; otherwise ignore number contents'
        ),
    ] = None


class SlurmStepId(BaseModel):
    sluid: Annotated[str | None, Field(description="SLUID (Slurm Lexicographically-sortable Unique ID)")] = (
        None
    )
    job_id: Annotated[
        Uint32NoValStruct | None, Field(description="Job ID (32 bit integer number with flags)")
    ] = None
    step_het_component: Annotated[
        Uint32NoValStruct | None, Field(description="HetJob component (32 bit integer number with flags)")
    ] = None
    step_id: Annotated[str | None, Field(description="Job step ID")] = None


class PartPrio(BaseModel):
    partition: Annotated[str | None, Field(description="Partition name")] = None
    priority: Annotated[
        int | None, Field(description="Prospective job priority if it runs in this partition")
    ] = None


class SelectTypeEnum(StrEnum):
    NONE = "NONE"
    CR_CPU_MEMORY = "CR_CPU_MEMORY"
    CR_CPU = "CR_CPU"
    CR_CORE_MEMORY = "CR_CORE_MEMORY"
    CR_CORE = "CR_CORE"
    CR_SOCKET_MEMORY = "CR_SOCKET_MEMORY"
    CR_SOCKET = "CR_SOCKET"
    CR_MEMORY = "CR_MEMORY"
    CR_ONE_TASK_PER_CORE = "CR_ONE_TASK_PER_CORE"
    CR_CORE_DEFAULT_DIST_BLOCK = "CR_CORE_DEFAULT_DIST_BLOCK"
    CR_NO_DIST_TOPO_BLOCK = "CR_NO_DIST_TOPO_BLOCK"
    CR_LLN = "CR_LLN"
    CR_PACK_NODES = "CR_PACK_NODES"
    LL_SHARED_GRES = "LL_SHARED_GRES"
    MULTIPLE_SHARING_GRES_PJ = "MULTIPLE_SHARING_GRES_PJ"
    ENFORCE_BINDING_GRES = "ENFORCE_BINDING_GRES"
    ONE_TASK_PER_SHARING_GRES = "ONE_TASK_PER_SHARING_GRES"


class SelectTypeEnum1(StrEnum):
    AVAILABLE = "AVAILABLE"
    ONE_ROW = "ONE_ROW"
    RESERVED = "RESERVED"


class Cpus(BaseModel):
    count: Annotated[int | None, Field(description="Total number of CPUs assigned to job")] = None
    used: Annotated[int | None, Field(description="Total number of CPUs used by job")] = None


class Memory(BaseModel):
    used: Annotated[int | None, Field(description="Total memory (MiB) used by job")] = None
    allocated: Annotated[int | None, Field(description="Total memory (MiB) allocated to job")] = None


class StatusEnum(StrEnum):
    INVALID = "INVALID"
    UNALLOCATED = "UNALLOCATED"
    ALLOCATED = "ALLOCATED"
    IN_USE = "IN_USE"


class JobResCore(BaseModel):
    index: Annotated[int, Field(description="Core index")]
    status: Annotated[list_aliased[StatusEnum], Field(description="Core status")]


class JobInfoGresDetail(RootModel[list[str]]):
    root: list[str]


class StatusEnum1(StrEnum):
    INVALID = "INVALID"
    PENDING = "PENDING"
    SUCCESS = "SUCCESS"
    ERROR = "ERROR"
    SIGNALED = "SIGNALED"
    CORE_DUMPED = "CORE_DUMPED"


class Signal(BaseModel):
    id: Annotated[
        Uint16NoValStruct | None,
        Field(description="Signal sent to process (numeric) (16 bit integer number with flags)"),
    ] = None
    name: Annotated[str | None, Field(description="Signal sent to process (name)")] = None


class ProcessExitCodeVerbose(BaseModel):
    status: Annotated[list_aliased[StatusEnum1] | None, Field(description="Status given by return code")] = (
        None
    )
    return_code: Annotated[
        Uint32NoValStruct | None,
        Field(description="Process return code (numeric) (32 bit integer number with flags)"),
    ] = None
    signal: Signal | None = None


class Float64NoValStruct(BaseModel):
    set: Annotated[
        bool | None, Field(description="True if number has been set; False if number is unset")
    ] = None
    infinite: Annotated[
        bool | None,
        Field(description='True if number has been set to infinite; "set" and "number" will be ignored'),
    ] = None
    number: Annotated[
        float | None,
        Field(
            description='If "set" is True the number will be set with value; otherwise ignore number contents'
        ),
    ] = None


class OpenapiWarnings(RootModel[list[OpenapiWarning]]):
    root: list[OpenapiWarning]


class OpenapiErrors(RootModel[list[OpenapiError]]):
    root: list[OpenapiError]


class OpenapiMeta(BaseModel):
    plugin: Plugin | None = None
    client: Client | None = None
    command: Annotated[StringArray | None, Field(description="CLI command (if applicable)")] = None
    slurm: Slurm | None = None


class JobArrayResponseArray(RootModel[list[JobArrayResponseMsgEntry]]):
    root: list[JobArrayResponseMsgEntry]


class ControllerPingArray(RootModel[list[ControllerPing]]):
    root: list[ControllerPing]


class Node(BaseModel):
    architecture: Annotated[str | None, Field(description="Computer architecture")] = None
    burstbuffer_network_address: Annotated[
        str | None, Field(description="Alternate network path to be used for sbcast network traffic")
    ] = None
    boards: Annotated[
        int | None, Field(description="Number of Baseboards in nodes with a baseboard controller")
    ] = None
    boot_time: Annotated[
        Uint64NoValStruct | None,
        Field(
            description="Time when the node booted (UNIX timestamp) (UNIX timestamp or time string recognized by Slurm (e.g., '[MM/DD[/YY]-]HH:MM[:SS]'); may also be infinite or unset) (64 bit integer number with flags)"
        ),
    ] = None
    tls_cert_last_renewal: Annotated[
        Uint64NoValStruct | None,
        Field(
            description="Time when TLS certificate was created (UNIX timestamp or time string recognized by Slurm (e.g., '[MM/DD[/YY]-]HH:MM[:SS]'); may also be infinite or unset) (64 bit integer number with flags)"
        ),
    ] = None
    cert_flags: Annotated[list_aliased[CertFlag] | None, Field(description="Certmgr status flags")] = None
    cluster_name: Annotated[
        str | None, Field(description="Cluster name (only set in federated environments)")
    ] = None
    cores: Annotated[
        int | None, Field(description="Number of cores in a single physical processor socket")
    ] = None
    specialized_cores: Annotated[int | None, Field(description="Number of cores reserved for system use")] = (
        None
    )
    cpu_binding: Annotated[
        int | None, Field(description="Default method for binding tasks to allocated CPUs")
    ] = None
    cpu_load: Annotated[int | None, Field(description="CPU load as reported by the OS")] = None
    free_mem: Annotated[
        Uint64NoValStruct | None,
        Field(
            description="Total memory in MB currently free as reported by the OS (64 bit integer number with flags)"
        ),
    ] = None
    cpus: Annotated[int | None, Field(description="Total CPUs, including cores and threads")] = None
    effective_cpus: Annotated[
        int | None, Field(description="Number of effective CPUs (excluding specialized CPUs)")
    ] = None
    specialized_cpus: Annotated[
        str | None,
        Field(
            description="Slurm abstract CPU IDs on this node reserved for exclusive use by slurmd and slurmstepd"
        ),
    ] = None
    energy: Annotated[AcctGatherEnergy | None, Field(description="Energy usage data")] = None
    extra: Annotated[
        str | None,
        Field(description="Arbitrary string used for node filtering if extra constraints are enabled"),
    ] = None
    features: Annotated[CsvString | None, Field(description="Available features")] = None
    active_features: Annotated[CsvString | None, Field(description="Currently active features")] = None
    gpu_spec: Annotated[str | None, Field(description="CPU cores reserved for jobs that also use a GPU")] = (
        None
    )
    gres: Annotated[str | None, Field(description="Generic resources")] = None
    gres_drained: Annotated[str | None, Field(description="Drained generic resources")] = None
    gres_used: Annotated[str | None, Field(description="Generic resources currently in use")] = None
    instance_id: Annotated[str | None, Field(description="Cloud instance ID")] = None
    instance_type: Annotated[str | None, Field(description="Cloud instance type")] = None
    last_busy: Annotated[
        Uint64NoValStruct | None,
        Field(
            description="Time when the node was last busy (UNIX timestamp) (UNIX timestamp or time string recognized by Slurm (e.g., '[MM/DD[/YY]-]HH:MM[:SS]'); may also be infinite or unset) (64 bit integer number with flags)"
        ),
    ] = None
    mcs_label: Annotated[str | None, Field(description="Multi-Category Security label")] = None
    specialized_memory: Annotated[
        int | None, Field(description="Combined memory limit, in MB, for Slurm compute node daemons")
    ] = None
    name: Annotated[str | None, Field(description="NodeName")] = None
    next_state_after_reboot: Annotated[
        list_aliased[NextStateAfterRebootEnum] | None,
        Field(description="The state the node will be assigned after rebooting"),
    ] = None
    address: Annotated[str | None, Field(description="NodeAddr, used to establish a communication path")] = (
        None
    )
    hostname: Annotated[str | None, Field(description="NodeHostname")] = None
    state: Annotated[
        list_aliased[StateEnum] | None, Field(description="Node state(s) applicable to this node")
    ] = None
    operating_system: Annotated[str | None, Field(description="Operating system reported by the node")] = None
    owner: Annotated[
        str | None, Field(description="User allowed to run jobs on this node (unset if no restriction)")
    ] = None
    partitions: Annotated[CsvString | None, Field(description="Partitions containing this node")] = None
    port: Annotated[int | None, Field(description="TCP port number of the slurmd")] = None
    real_memory: Annotated[int | None, Field(description="Total memory in MB on the node")] = None
    res_cores_per_gpu: Annotated[
        int | None, Field(description="Number of CPU cores per GPU restricted to GPU jobs")
    ] = None
    comment: Annotated[str | None, Field(description="Arbitrary comment")] = None
    reason: Annotated[
        str | None,
        Field(
            description='Describes why the node is in a "DOWN", "DRAINED", "DRAINING", "FAILING" or "FAIL" state'
        ),
    ] = None
    reason_changed_at: Annotated[
        Uint64NoValStruct | None,
        Field(
            description="When the reason changed (UNIX timestamp) (UNIX timestamp or time string recognized by Slurm (e.g., '[MM/DD[/YY]-]HH:MM[:SS]'); may also be infinite or unset) (64 bit integer number with flags)"
        ),
    ] = None
    reason_set_by_user: Annotated[str | None, Field(description="User who set the reason")] = None
    resume_after: Annotated[
        Uint64NoValStruct | None,
        Field(
            description='Number of seconds after the node\'s state is updated to "DOWN" or "DRAIN" before scheduling a node state resume (UNIX timestamp or time string recognized by Slurm (e.g., \'[MM/DD[/YY]-]HH:MM[:SS]\'); may also be infinite or unset) (64 bit integer number with flags)'
        ),
    ] = None
    reservation: Annotated[str | None, Field(description="Name of reservation containing this node")] = None
    suspend_time: Annotated[
        Uint32NoValStruct | None,
        Field(
            description="Time in idle state before being considered for power save. (32 bit integer number with flags)"
        ),
    ] = None
    alloc_memory: Annotated[
        int | None, Field(description="Total memory in MB currently allocated for jobs")
    ] = None
    alloc_cpus: Annotated[
        int | None, Field(description="Total number of CPUs currently allocated for jobs")
    ] = None
    alloc_idle_cpus: Annotated[int | None, Field(description="Total number of idle CPUs")] = None
    tres_used: Annotated[
        str | None, Field(description="Trackable resources currently allocated for jobs")
    ] = None
    slurmd_start_time: Annotated[
        Uint64NoValStruct | None,
        Field(
            description="Time when the slurmd started (UNIX timestamp) (UNIX timestamp or time string recognized by Slurm (e.g., '[MM/DD[/YY]-]HH:MM[:SS]'); may also be infinite or unset) (64 bit integer number with flags)"
        ),
    ] = None
    sockets: Annotated[
        int | None, Field(description="Number of physical processor sockets/chips on the node")
    ] = None
    threads: Annotated[
        int | None, Field(description="Number of logical threads in a single physical core")
    ] = None
    temporary_disk: Annotated[
        int | None, Field(description="Total size in MB of temporary disk storage in TmpFS")
    ] = None
    weight: Annotated[int | None, Field(description="Weight of the node for scheduling purposes")] = None
    topology: Annotated[str | None, Field(description="Topology")] = None
    tres: Annotated[str | None, Field(description="Configured trackable resources")] = None
    version: Annotated[str | None, Field(description="Slurmd version")] = None


class PriorityByPartition(RootModel[list[PartPrio]]):
    root: list[PartPrio]


class JobResCoreArray(RootModel[list[JobResCore]]):
    root: list[JobResCore]


class OpenapiJobPostResponse(BaseModel):
    results: Annotated[
        JobArrayResponseArray | None, Field(description="Job update results (Job update results)")
    ] = None
    meta: Annotated[OpenapiMeta | None, Field(description="Slurm meta values")] = None
    errors: Annotated[OpenapiErrors | None, Field(description="Query errors")] = None
    warnings: Annotated[OpenapiWarnings | None, Field(description="Query warnings")] = None


class OpenapiPingArrayResp(BaseModel):
    pings: Annotated[ControllerPingArray, Field(description="pings")]
    meta: Annotated[OpenapiMeta | None, Field(description="Slurm meta values")] = None
    errors: Annotated[OpenapiErrors | None, Field(description="Query errors")] = None
    warnings: Annotated[OpenapiWarnings | None, Field(description="Query warnings")] = None


class Nodes(RootModel[list[Node]]):
    root: list[Node]


class JobResSocket(BaseModel):
    index: Annotated[int, Field(description="Core index")]
    cores: Annotated[JobResCoreArray, Field(description="Core in socket")]


class OpenapiNodesResp(BaseModel):
    nodes: Annotated[Nodes, Field(description="List of nodes")]
    last_update: Annotated[
        Uint64NoValStruct,
        Field(
            description="Time of last node change (UNIX timestamp) (UNIX timestamp or time string recognized by Slurm (e.g., '[MM/DD[/YY]-]HH:MM[:SS]'); may also be infinite or unset) (64 bit integer number with flags)"
        ),
    ]
    meta: Annotated[OpenapiMeta | None, Field(description="Slurm meta values")] = None
    errors: Annotated[OpenapiErrors | None, Field(description="Query errors")] = None
    warnings: Annotated[OpenapiWarnings | None, Field(description="Query warnings")] = None


class JobResSocketArray(RootModel[list[JobResSocket]]):
    root: list[JobResSocket]


class JobResNode(BaseModel):
    index: Annotated[int, Field(description="Node index")]
    name: Annotated[str, Field(description="Node name")]
    cpus: Cpus | None = None
    memory: Memory | None = None
    sockets: Annotated[JobResSocketArray, Field(description="Socket allocations in node")]


class JobResNodes(RootModel[list[JobResNode]]):
    root: Annotated[list[JobResNode], Field(description="Job resources for a node")]


class Nodes1(BaseModel):
    count: Annotated[int | None, Field(description="Number of allocated nodes")] = None
    select_type: Annotated[
        list_aliased[SelectTypeEnum1] | None, Field(description="Node scheduling selection method")
    ] = None
    list: Annotated[str | None, Field(description="Node(s) allocated to the job")] = None
    whole: Annotated[bool | None, Field(description="Whether whole nodes were allocated")] = None
    allocation: Annotated[
        JobResNodes | None, Field(description="Allocated node resources (Job resources for a node)")
    ] = None


class JobRes(BaseModel):
    select_type: Annotated[
        list_aliased[SelectTypeEnum], Field(description="Scheduler consumable resource selection type")
    ]
    nodes: Nodes1 | None = None
    cpus: Annotated[int, Field(description="Number of allocated CPUs")]
    threads_per_core: Annotated[
        Uint16NoValStruct,
        Field(description="Number of processor threads per CPU core (16 bit integer number with flags)"),
    ]


class JobInfo(BaseModel):
    account: Annotated[str | None, Field(description="Account associated with the job")] = None
    accrue_time: Annotated[
        Uint64NoValStruct | None,
        Field(
            description="When the job started accruing age priority (UNIX timestamp) (UNIX timestamp or time string recognized by Slurm (e.g., '[MM/DD[/YY]-]HH:MM[:SS]'); may also be infinite or unset) (64 bit integer number with flags)"
        ),
    ] = None
    admin_comment: Annotated[str | None, Field(description="Arbitrary comment made by administrator")] = None
    allocating_node: Annotated[str | None, Field(description="Local node making the resource allocation")] = (
        None
    )
    array_job_id: Annotated[
        Uint32NoValStruct | None,
        Field(description="Job ID of job array, or 0 if N/A (32 bit integer number with flags)"),
    ] = None
    array_task_id: Annotated[
        Uint32NoValStruct | None,
        Field(description="Task ID of this task in job array (32 bit integer number with flags)"),
    ] = None
    array_max_tasks: Annotated[
        Uint32NoValStruct | None,
        Field(
            description="Maximum number of simultaneously running array tasks, 0 if no limit (32 bit integer number with flags)"
        ),
    ] = None
    array_task_string: Annotated[
        str | None, Field(description="String expression of task IDs in this record")
    ] = None
    association_id: Annotated[int | None, Field(description="Unique identifier for the association")] = None
    batch_features: Annotated[str | None, Field(description="Features required for batch script's node")] = (
        None
    )
    batch_flag: Annotated[bool | None, Field(description="True if batch job")] = None
    batch_host: Annotated[str | None, Field(description="Name of host running batch script")] = None
    flags: Annotated[list_aliased[Flag] | None, Field(description="Job flags")] = None
    burst_buffer: Annotated[str | None, Field(description="Burst buffer specifications")] = None
    burst_buffer_state: Annotated[str | None, Field(description="Burst buffer state details")] = None
    cluster: Annotated[str | None, Field(description="Cluster name")] = None
    cluster_features: Annotated[str | None, Field(description="List of required cluster features")] = None
    command: Annotated[str | None, Field(description="Executed command")] = None
    comment: Annotated[str | None, Field(description="Arbitrary comment")] = None
    container: Annotated[str | None, Field(description="Absolute path to OCI container bundle")] = None
    container_id: Annotated[str | None, Field(description="OCI container ID")] = None
    container_type: Annotated[str | None, Field(description="Job container type")] = None
    contiguous: Annotated[bool | None, Field(description="True if job requires contiguous nodes")] = None
    core_spec: Annotated[int | None, Field(description="Specialized core count")] = None
    thread_spec: Annotated[int | None, Field(description="Specialized thread count")] = None
    cores_per_socket: Annotated[
        Uint16NoValStruct | None,
        Field(description="Cores per socket required (16 bit integer number with flags)"),
    ] = None
    billable_tres: Annotated[
        Float64NoValStruct | None,
        Field(description="Billable TRES (64 bit floating point number with flags)"),
    ] = None
    cpus_per_task: Annotated[
        Uint16NoValStruct | None,
        Field(description="Number of CPUs required by each task (16 bit integer number with flags)"),
    ] = None
    cpu_frequency_minimum: Annotated[
        Uint32NoValStruct | None,
        Field(description="Minimum CPU frequency (32 bit integer number with flags)"),
    ] = None
    cpu_frequency_maximum: Annotated[
        Uint32NoValStruct | None,
        Field(description="Maximum CPU frequency (32 bit integer number with flags)"),
    ] = None
    cpu_frequency_governor: Annotated[
        Uint32NoValStruct | None,
        Field(description="CPU frequency governor (32 bit integer number with flags)"),
    ] = None
    cpus_per_tres: Annotated[
        str | None,
        Field(
            description="Semicolon delimited list of TRES=# values indicating how many CPUs should be allocated for each specified TRES (currently only used for gres/gpu)"
        ),
    ] = None
    cron: Annotated[str | None, Field(description="Time specification for scrontab job")] = None
    deadline: Annotated[
        Uint64NoValStruct | None,
        Field(
            description="Latest time that the job may start (UNIX timestamp) (UNIX timestamp or time string recognized by Slurm (e.g., '[MM/DD[/YY]-]HH:MM[:SS]'); may also be infinite or unset) (64 bit integer number with flags)"
        ),
    ] = None
    delay_boot: Annotated[
        Uint32NoValStruct | None,
        Field(
            description="Number of seconds after job eligible start that nodes will be rebooted to satisfy feature specification (32 bit integer number with flags)"
        ),
    ] = None
    dependency: Annotated[
        str | None, Field(description="Other jobs that must meet certain criteria before this job can start")
    ] = None
    derived_exit_code: Annotated[
        ProcessExitCodeVerbose | None,
        Field(description="Highest exit code of all job steps (return code returned by process)"),
    ] = None
    eligible_time: Annotated[
        Uint64NoValStruct | None,
        Field(
            description="Time when the job became eligible to run (UNIX timestamp) (UNIX timestamp or time string recognized by Slurm (e.g., '[MM/DD[/YY]-]HH:MM[:SS]'); may also be infinite or unset) (64 bit integer number with flags)"
        ),
    ] = None
    end_time: Annotated[
        Uint64NoValStruct | None,
        Field(
            description="End time, real or expected (UNIX timestamp) (UNIX timestamp or time string recognized by Slurm (e.g., '[MM/DD[/YY]-]HH:MM[:SS]'); may also be infinite or unset) (64 bit integer number with flags)"
        ),
    ] = None
    excluded_nodes: Annotated[
        str | None, Field(description="Comma-separated list of nodes that may not be used")
    ] = None
    exit_code: Annotated[
        ProcessExitCodeVerbose | None,
        Field(description="Exit code of the job (return code returned by process)"),
    ] = None
    extra: Annotated[
        str | None,
        Field(description="Arbitrary string used for node filtering if extra constraints are enabled"),
    ] = None
    failed_node: Annotated[str | None, Field(description="Name of node that caused job failure")] = None
    features: Annotated[
        str | None, Field(description="Comma-separated list of features that are required")
    ] = None
    federation_origin: Annotated[
        str | None, Field(description="Origin cluster's name (when using federation)")
    ] = None
    federation_siblings_active: Annotated[str | None, Field(description="Active sibling job names")] = None
    federation_siblings_viable: Annotated[str | None, Field(description="Viable sibling job names")] = None
    gres_detail: Annotated[
        JobInfoGresDetail | None, Field(description="List of GRES index and counts allocated per node")
    ] = None
    group_id: Annotated[int | None, Field(description="Group ID of the user that owns the job")] = None
    group_name: Annotated[str | None, Field(description="Group name of the user that owns the job")] = None
    het_job_id: Annotated[
        Uint32NoValStruct | None,
        Field(description="Heterogeneous job ID, if applicable (32 bit integer number with flags)"),
    ] = None
    het_job_id_set: Annotated[
        str | None, Field(description="Job ID range for all heterogeneous job components")
    ] = None
    het_job_offset: Annotated[
        Uint32NoValStruct | None,
        Field(
            description="Unique sequence number applied to this component of the heterogeneous job (32 bit integer number with flags)"
        ),
    ] = None
    job_id: Annotated[int | None, Field(description="Job ID")] = None
    job_resources: Annotated[JobRes | None, Field(description="Resources used by the job")] = None
    job_size_str: Annotated[
        CsvString | None, Field(description="Number of nodes (in a range) required for this job")
    ] = None
    job_state: Annotated[list_aliased[JobStateEnum] | None, Field(description="Current state")] = None
    last_sched_evaluation: Annotated[
        Uint64NoValStruct | None,
        Field(
            description="Last time job was evaluated for scheduling (UNIX timestamp) (UNIX timestamp or time string recognized by Slurm (e.g., '[MM/DD[/YY]-]HH:MM[:SS]'); may also be infinite or unset) (64 bit integer number with flags)"
        ),
    ] = None
    licenses: Annotated[str | None, Field(description="License(s) required by the job")] = None
    licenses_allocated: Annotated[str | None, Field(description="License(s) allocated to the job")] = None
    mail_type: Annotated[list_aliased[MailTypeEnum] | None, Field(description="Mail event type(s)")] = None
    mail_user: Annotated[str | None, Field(description="User to receive email notifications")] = None
    max_cpus: Annotated[
        Uint32NoValStruct | None,
        Field(description="Maximum number of CPUs usable by the job (32 bit integer number with flags)"),
    ] = None
    max_nodes: Annotated[
        Uint32NoValStruct | None,
        Field(description="Maximum number of nodes usable by the job (32 bit integer number with flags)"),
    ] = None
    mcs_label: Annotated[str | None, Field(description="Multi-Category Security label on the job")] = None
    memory_per_tres: Annotated[
        str | None,
        Field(
            description="Semicolon delimited list of TRES=# values indicating how much memory in megabytes should be allocated for each specified TRES (currently only used for gres/gpu)"
        ),
    ] = None
    memory_update_delay: Annotated[int | None, Field(description="Auto-reduce memory delay in minutes")] = (
        None
    )
    memory_update_margin: Annotated[int | None, Field(description="Auto-reduce memory margin percent")] = None
    name: Annotated[str | None, Field(description="Job name")] = None
    network: Annotated[str | None, Field(description="Network specs for the job")] = None
    nodes: Annotated[str | None, Field(description="Node(s) allocated to the job")] = None
    nice: Annotated[int | None, Field(description="Requested job priority change")] = None
    tasks_per_core: Annotated[
        Uint16NoValStruct | None,
        Field(description="Number of tasks invoked on each core (16 bit integer number with flags)"),
    ] = None
    tasks_per_tres: Annotated[
        Uint16NoValStruct | None,
        Field(description="Number of tasks that can assess each GPU (16 bit integer number with flags)"),
    ] = None
    tasks_per_node: Annotated[
        Uint16NoValStruct | None,
        Field(description="Number of tasks invoked on each node (16 bit integer number with flags)"),
    ] = None
    tasks_per_socket: Annotated[
        Uint16NoValStruct | None,
        Field(description="Number of tasks invoked on each socket (16 bit integer number with flags)"),
    ] = None
    tasks_per_board: Annotated[
        Uint16NoValStruct | None,
        Field(description="Number of tasks invoked on each board (16 bit integer number with flags)"),
    ] = None
    cpus: Annotated[
        Uint32NoValStruct | None,
        Field(description="Minimum number of CPUs required (32 bit integer number with flags)"),
    ] = None
    node_count: Annotated[
        Uint32NoValStruct | None,
        Field(description="Minimum number of nodes required (32 bit integer number with flags)"),
    ] = None
    tasks: Annotated[
        Uint32NoValStruct | None, Field(description="Number of tasks (32 bit integer number with flags)")
    ] = None
    partition: Annotated[str | None, Field(description="Partition assigned to the job")] = None
    prefer: Annotated[
        str | None, Field(description="Feature(s) the job requested but that are not required")
    ] = None
    memory_per_cpu: Annotated[
        Uint64NoValStruct | None,
        Field(description="Minimum memory in megabytes per allocated CPU (64 bit integer number with flags)"),
    ] = None
    memory_per_node: Annotated[
        Uint64NoValStruct | None,
        Field(
            description="Minimum memory in megabytes per allocated node (64 bit integer number with flags)"
        ),
    ] = None
    minimum_cpus_per_node: Annotated[
        Uint16NoValStruct | None,
        Field(description="Minimum number of CPUs per node (16 bit integer number with flags)"),
    ] = None
    minimum_tmp_disk_per_node: Annotated[
        Uint32NoValStruct | None,
        Field(description="Minimum tmp disk space required per node (32 bit integer number with flags)"),
    ] = None
    preempt_time: Annotated[
        Uint64NoValStruct | None,
        Field(
            description="Time job received preemption signal (UNIX timestamp) (UNIX timestamp or time string recognized by Slurm (e.g., '[MM/DD[/YY]-]HH:MM[:SS]'); may also be infinite or unset) (64 bit integer number with flags)"
        ),
    ] = None
    preemptable_time: Annotated[
        Uint64NoValStruct | None,
        Field(
            description="Time job becomes eligible for preemption (UNIX timestamp) (UNIX timestamp or time string recognized by Slurm (e.g., '[MM/DD[/YY]-]HH:MM[:SS]'); may also be infinite or unset) (64 bit integer number with flags)"
        ),
    ] = None
    pre_sus_time: Annotated[
        Uint64NoValStruct | None,
        Field(
            description="Total run time prior to last suspend in seconds (UNIX timestamp or time string recognized by Slurm (e.g., '[MM/DD[/YY]-]HH:MM[:SS]'); may also be infinite or unset) (64 bit integer number with flags)"
        ),
    ] = None
    hold: Annotated[bool | None, Field(description="Hold (true) or release (false) job (Job held)")] = None
    priority: Annotated[
        Uint32NoValStruct | None,
        Field(description="Request specific job priority (32 bit integer number with flags)"),
    ] = None
    priority_by_partition: Annotated[
        PriorityByPartition | None,
        Field(description="Prospective job priority in each partition that may be used by this job"),
    ] = None
    profile: Annotated[
        list_aliased[ProfileEnum] | None, Field(description="Profile used by the acct_gather_profile plugin")
    ] = None
    qos: Annotated[
        str | None, Field(description="Quality of Service assigned to the job, if pending the QOS requested")
    ] = None
    reboot: Annotated[bool | None, Field(description="Node reboot requested before start")] = None
    required_nodes: Annotated[str | None, Field(description="Comma-separated list of required nodes")] = None
    required_switches: Annotated[int | None, Field(description="Maximum number of switches")] = None
    requeue: Annotated[bool | None, Field(description="Determines whether the job may be requeued")] = None
    resize_time: Annotated[
        Uint64NoValStruct | None,
        Field(
            description="Time of last size change (UNIX timestamp) (UNIX timestamp or time string recognized by Slurm (e.g., '[MM/DD[/YY]-]HH:MM[:SS]'); may also be infinite or unset) (64 bit integer number with flags)"
        ),
    ] = None
    restart_cnt: Annotated[int | None, Field(description="Number of job restarts")] = None
    resv_name: Annotated[str | None, Field(description="Name of reservation to use")] = None
    scheduled_nodes: Annotated[
        str | None, Field(description="List of nodes scheduled to be used for the job")
    ] = None
    segment_size: Annotated[int | None, Field(description="Requested segment size")] = None
    selinux_context: Annotated[str | None, Field(description="SELinux context")] = None
    shared: Annotated[
        list_aliased[SharedEnum] | None,
        Field(
            deprecated=True,
            description="Ignored. Was 'How the job can share resources with other jobs, if at all'. Replaced by 'oversubscribe' and 'exclusive'.",
        ),
    ] = None
    step_id: Annotated[SlurmStepId | None, Field(description="Job step ID")] = None
    sockets_per_board: Annotated[int | None, Field(description="Number of sockets per board required")] = None
    sockets_per_node: Annotated[
        Uint16NoValStruct | None,
        Field(description="Number of sockets per node required (16 bit integer number with flags)"),
    ] = None
    start_time: Annotated[
        Uint64NoValStruct | None,
        Field(
            description="Time execution began, or is expected to begin (UNIX timestamp) (UNIX timestamp or time string recognized by Slurm (e.g., '[MM/DD[/YY]-]HH:MM[:SS]'); may also be infinite or unset) (64 bit integer number with flags)"
        ),
    ] = None
    state_description: Annotated[str | None, Field(description="Optional details for state_reason")] = None
    state_reason: Annotated[str | None, Field(description="Reason for current Pending or Failed state")] = (
        None
    )
    standard_input: Annotated[str | None, Field(description="Path to stdin file")] = None
    standard_output: Annotated[str | None, Field(description="Path to stdout file")] = None
    standard_error: Annotated[str | None, Field(description="Path to stderr file")] = None
    stdin_expanded: Annotated[str | None, Field(description="Job stdin with expanded fields")] = None
    stdout_expanded: Annotated[str | None, Field(description="Job stdout with expanded fields")] = None
    stderr_expanded: Annotated[str | None, Field(description="Job stderr with expanded fields")] = None
    submit_time: Annotated[
        Uint64NoValStruct | None,
        Field(
            description="Time when the job was submitted (UNIX timestamp) (UNIX timestamp or time string recognized by Slurm (e.g., '[MM/DD[/YY]-]HH:MM[:SS]'); may also be infinite or unset) (64 bit integer number with flags)"
        ),
    ] = None
    submit_line: Annotated[
        str | None, Field(description="Job submit line (e.g. 'sbatch -N3 job.sh job_arg'")
    ] = None
    suspend_time: Annotated[
        Uint64NoValStruct | None,
        Field(
            description="Time the job was last suspended or resumed (UNIX timestamp) (UNIX timestamp or time string recognized by Slurm (e.g., '[MM/DD[/YY]-]HH:MM[:SS]'); may also be infinite or unset) (64 bit integer number with flags)"
        ),
    ] = None
    system_comment: Annotated[str | None, Field(description="Arbitrary comment from slurmctld")] = None
    time_limit: Annotated[
        Uint32NoValStruct | None,
        Field(description="Maximum run time in minutes (32 bit integer number with flags)"),
    ] = None
    time_minimum: Annotated[
        Uint32NoValStruct | None,
        Field(description="Minimum run time in minutes (32 bit integer number with flags)"),
    ] = None
    threads_per_core: Annotated[
        Uint16NoValStruct | None,
        Field(
            description="Number of processor threads per CPU core required (16 bit integer number with flags)"
        ),
    ] = None
    tres_bind: Annotated[str | None, Field(description="Task to TRES binding directives")] = None
    tres_freq: Annotated[str | None, Field(description="TRES frequency directives")] = None
    tres_per_job: Annotated[
        str | None, Field(description="Comma-separated list of TRES=# values to be allocated per job")
    ] = None
    tres_per_node: Annotated[
        str | None, Field(description="Comma-separated list of TRES=# values to be allocated per node")
    ] = None
    tres_per_socket: Annotated[
        str | None, Field(description="Comma-separated list of TRES=# values to be allocated per socket")
    ] = None
    tres_per_task: Annotated[
        str | None, Field(description="Comma-separated list of TRES=# values to be allocated per task")
    ] = None
    tres_req_str: Annotated[str | None, Field(description="TRES requested by the job")] = None
    tres_alloc_str: Annotated[str | None, Field(description="TRES used by the job")] = None
    user_id: Annotated[int | None, Field(description="User ID that owns the job")] = None
    user_name: Annotated[str | None, Field(description="User name that owns the job")] = None
    maximum_switch_wait_time: Annotated[
        int | None, Field(description="Maximum time to wait for switches in seconds")
    ] = None
    wckey: Annotated[str | None, Field(description="Workload characterization key")] = None
    current_working_directory: Annotated[
        str | None, Field(description="Working directory to use for the job")
    ] = None


class JobInfoMsg(RootModel[list[JobInfo]]):
    root: list[JobInfo]


class OpenapiJobInfoResp(BaseModel):
    jobs: Annotated[JobInfoMsg, Field(description="List of jobs")]
    last_backfill: Annotated[
        Uint64NoValStruct,
        Field(
            description="Time of last backfill scheduler run (UNIX timestamp) (UNIX timestamp or time string recognized by Slurm (e.g., '[MM/DD[/YY]-]HH:MM[:SS]'); may also be infinite or unset) (64 bit integer number with flags)"
        ),
    ]
    last_update: Annotated[
        Uint64NoValStruct,
        Field(
            description="Time of last job change (UNIX timestamp) (UNIX timestamp or time string recognized by Slurm (e.g., '[MM/DD[/YY]-]HH:MM[:SS]'); may also be infinite or unset) (64 bit integer number with flags)"
        ),
    ]
    meta: Annotated[OpenapiMeta | None, Field(description="Slurm meta values")] = None
    errors: Annotated[OpenapiErrors | None, Field(description="Query errors")] = None
    warnings: Annotated[OpenapiWarnings | None, Field(description="Query warnings")] = None
