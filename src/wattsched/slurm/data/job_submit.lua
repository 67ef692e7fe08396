--[[
wattsched's job_submit plugin for Slurm (JobSubmitPlugins=lua; this file sits beside slurm.conf).

Every job submitted to the partition wattsched manages is held at submission (priority 0): wattsched's
controller chooses its MIG slice type and node, sets them, and releases it. Jobs of other partitions are left
alone. The hold a plugin makes shows as reason JobHeldUser, which the job's owner could release; so
slurm_job_modify refuses a priority change on a managed job unless it comes from an administrator uid (the
controller), and the controller holds new jobs again as an administrator.

MANAGED_PARTITION and MANAGED_IS_DEFAULT are rewritten by wattsched.slurm.sandbox; on a real cluster edit
them here. ADMIN_UIDS: who may release managed jobs (root; add SlurmUser's uid if the controller runs as it).
--]]

local MANAGED_PARTITION = "mig" -- wattsched: managed partition
local MANAGED_IS_DEFAULT = true -- wattsched: managed partition is the default
local ADMIN_UIDS = { [0] = true }

local function managed(partition)
    if partition == nil or partition == "" then
        return MANAGED_IS_DEFAULT
    end
    for name in string.gmatch(partition, "[^,]+") do
        if name == MANAGED_PARTITION then
            return true
        end
    end
    return false
end

function slurm_job_submit(job_desc, part_list, submit_uid)
    if managed(job_desc.partition) then
        job_desc.priority = 0
        job_desc.admin_comment = "wattsched: waiting to be placed by the wattsched controller"
    end
    return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
    if ADMIN_UIDS[modify_uid] then
        return slurm.SUCCESS
    end
    if managed(job_rec.partition) and job_desc.priority ~= nil and job_desc.priority ~= slurm.NO_VAL then
        slurm.log_user("partition " .. MANAGED_PARTITION .. " is scheduled by wattsched, which releases its jobs itself")
        return slurm.ERROR
    end
    return slurm.SUCCESS
end

return slurm.SUCCESS
